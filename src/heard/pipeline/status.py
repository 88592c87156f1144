"""A meeting's state as people are shown it, the same in ``heard status`` and REST.

The store keeps what was last written (``transcribing``, ``pending``); a track whose process
died mid-run (killed, crashed, the server restarted) still reads ``transcribing`` there. It is
shown as ``interrupted`` when its holder, a process of this host, no longer runs, and so is its
meeting: ``heard transcribe --resume`` or ``POST /v1/meetings/{id}/run`` finishes it.
"""

from __future__ import annotations

from collections.abc import Sequence

from heard.store.holder import holder_is_gone
from heard.store.meetings import MeetingSummary, TrackState
from heard.store.models import TrackStatus

__all__ = ["INTERRUPTED", "meeting_label", "track_label"]

INTERRUPTED = "interrupted"


def track_label(track: TrackState) -> str:
    """``track``'s status, ``interrupted`` when the process transcribing it is gone."""
    if track.status is TrackStatus.TRANSCRIBING and holder_is_gone(track.claimed_by):
        return INTERRUPTED
    return str(track.status)


def meeting_label(meeting: MeetingSummary, tracks: Sequence[TrackState]) -> str:
    """``meeting``'s status, ``interrupted`` when one of its tracks is."""
    if any(track_label(t) == INTERRUPTED for t in tracks):
        return INTERRUPTED
    return str(meeting.status)
