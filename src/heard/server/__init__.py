"""heard's HTTP and WebSocket server (``heard serve``); needs ``heard[server]``."""
