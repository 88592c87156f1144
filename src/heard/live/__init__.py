"""A live conversation: transcript, memory and release wired together."""
