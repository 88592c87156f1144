"""The wire protocols of other speech services and voice platforms that heard answers, one
module (or folder) each: ``wyoming`` (Home Assistant's, over TCP)."""
