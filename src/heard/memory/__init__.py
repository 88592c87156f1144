"""Memory a voice assistant can recall from: evidence (final utterances) and pages."""
