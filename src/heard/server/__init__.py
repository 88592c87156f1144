"""heard's HTTP and WebSocket server (``heard serve``)."""
