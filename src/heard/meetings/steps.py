"""The meeting pipeline's steps, each one short transaction in the store, safe to repeat.

The same steps serve the in-process run (``run_pipeline``) and the Celery tasks:

* ``recover_stuck`` returns tracks left in ``transcribing`` by a runner that died to
  ``pending``, or marks them ``failed`` after the last attempt: at once when the runner was a
  process of this host that is gone, else once the claim is older than a timeout;
* ``claim_track`` moves one track ``pending -> transcribing`` with a compare-and-set UPDATE,
  so two runners never transcribe the same track, and records which process holds it;
* ``transcribe_claimed`` runs the transcriber outside any transaction (in the language the user
  gave for the track, if any) and records segments and their language (``done``) or the error
  (``pending`` again, or ``failed``);
* a recording of several people is diarized first (``diarize_claimed``), and who spoke when
  is kept on the track before transcription starts, so a crash resumes without redoing it;
* ``build_meeting`` replaces the meeting's phrases in one transaction once every track is
  done or failed, and keeps them as the owner's memory evidence.

The status changes themselves live in ``heard.store.tracks`` (its table of transitions) and
the phrases' transaction in ``heard.store.phrases``; this module decides with ``PipelineOptions``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from heard.asr.transcriber import ProgressCallback, Transcriber
from heard.diarize import AUTO, Diarization, Diarizer, default_diarizer, speaker_count, split_words
from heard.errors import InputError, MissingDependencyError, StoppingError
from heard.meetings.memory import remember_meeting
from heard.settings import Settings
from heard.store.database import Database
from heard.store.holder import LOCAL, Holders
from heard.store.models import TrackStatus
from heard.store.phrases import BuildResult, segments_to_json, store_phrases
from heard.store.tracks import (
    ClaimedTrack,
    claim_track,
    record_diarization,
    record_outcome,
    recover_abandoned,
)
from heard.timeline.phrases import INTERJECTION_THRESHOLD_S

__all__ = [
    "BuildResult",
    "ClaimedTrack",
    "Clock",
    "PipelineOptions",
    "build_meeting",
    "claim_track",
    "diarize_claimed",
    "recover_stuck",
    "transcribe_claimed",
]

Clock = Callable[[], datetime]
log = logging.getLogger("heard.meetings")


@dataclass(frozen=True, slots=True)
class PipelineOptions:
    stuck_after_s: float = 1800.0
    """A track ``transcribing`` this long was abandoned by a crashed runner (tiny.en
    transcribes an hour of audio in a few minutes on 2 cores; 30 min is a wide margin)."""
    max_attempts: int = 3
    """Transcription attempts before a track is marked failed."""
    retry_delay_s: float = 30.0
    """How long to wait before trying again while a track is still recording."""
    interjection_threshold_s: float = INTERJECTION_THRESHOLD_S

    @classmethod
    def from_settings(cls, chosen: Settings) -> PipelineOptions:
        """These options, with what ``chosen`` sets in place of the defaults."""
        default = cls()
        return cls(
            stuck_after_s=chosen.stuck_after_s or default.stuck_after_s,
            retry_delay_s=chosen.retry_delay_s or default.retry_delay_s,
        )


def recover_stuck(
    db: Database,
    meeting_id: uuid.UUID,
    now: datetime,
    options: PipelineOptions,
    holders: Holders = LOCAL,
) -> int:
    """Return abandoned ``transcribing`` tracks to ``pending`` (or ``failed``); count them.
    ``holders`` judges who holds them (default: what this host shows;
    ``heard.store.leases.judge`` adds the leases)."""
    return recover_abandoned(
        db, meeting_id, now, stuck_after_s=options.stuck_after_s,
        max_attempts=options.max_attempts, holders=holders,
    )  # fmt: skip


def transcribe_claimed(
    db: Database,
    claim: ClaimedTrack,
    transcriber: Transcriber,
    clock: Clock,
    options: PipelineOptions,
    on_progress: ProgressCallback | None = None,
    diarizer: Diarizer | Callable[[], Diarizer] | None = None,
) -> TrackStatus:
    """Transcribe a claimed track and record the outcome; returns the track's new status.
    A recording of several people (``claim.speakers``) is diarized first (``diarize_claimed``)
    and each word stored with its speaker.

    A bad file (``InputError``) fails the track at once; a process shutting down
    (``StoppingError``) gives it back: still its claim, the attempt not counted, so the next
    start of a server takes it back and resumes it; any other
    error leaves it ``pending`` for another attempt until ``max_attempts``.
    """
    try:
        who = None if claim.speakers is None else diarize_claimed(db, claim, diarizer, on_progress)
        heard = transcriber.transcribe(
            claim.location, channel=claim.channel, language=claim.language,
            on_progress=on_progress,
        )  # fmt: skip
    except (InputError, MissingDependencyError) as e:
        return record_outcome(db, claim, clock(), segments=None, transcriber=transcriber.name,
                              error=str(e))  # fmt: skip
    except StoppingError as e:  # given back whole; the next start resumes it, uncounted
        return record_outcome(db, claim, clock(), segments=None, transcriber=transcriber.name,
                              error=str(e), given_back=True)  # fmt: skip
    except Exception as e:  # noqa: BLE001 - any transcriber failure is recorded on the track
        return record_outcome(
            db, claim, clock(), segments=None, transcriber=transcriber.name,
            error=f"{type(e).__name__}: {e}", retry=claim.attempts < options.max_attempts,
        )  # fmt: skip
    if who is None:
        segments = segments_to_json(heard.segments)
    else:  # each speaker's words, labelled with the speaker's number
        segments = [row for speaker, spoken in sorted(split_words(heard.segments, who).items())
                    for row in segments_to_json(spoken, speaker=speaker)]  # fmt: skip
    return record_outcome(
        db, claim, clock(), segments=segments, transcriber=transcriber.name,
        language=heard.language, language_probability=heard.language_probability,
        warnings=heard.warnings,
    )  # fmt: skip


def diarize_claimed(
    db: Database,
    claim: ClaimedTrack,
    diarizer: Diarizer | Callable[[], Diarizer] | None,
    on_progress: ProgressCallback | None = None,
) -> Diarization:
    """Who spoke when in the claimed recording: what an earlier attempt kept, else the
    diarizer's answer, kept on the track before transcription starts (``diarizer`` may be a
    factory, called only then; None: ``heard.diarize.default_diarizer``)."""
    if claim.diarization is not None:
        return Diarization.from_json(claim.diarization)
    if diarizer is None:
        diarizer = default_diarizer
    if not isinstance(diarizer, Diarizer):
        diarizer = diarizer()
    found = diarizer.diarize(
        claim.location, channel=claim.channel, speakers=speaker_count(claim.speakers or AUTO),
        on_progress=on_progress,  # the progress bar, and a look at a shutdown
    )  # fmt: skip
    record_diarization(db, claim, found.to_json())
    return found


def build_meeting(db: Database, meeting_id: uuid.UUID, options: PipelineOptions) -> BuildResult:
    """Replace the meeting's phrases with those of all done tracks, in one transaction; once
    built, they are its owner's memory evidence too (``remember_meeting``), so a recall or a
    search across meetings finds them."""
    built = store_phrases(db, meeting_id, interjection_threshold_s=options.interjection_threshold_s)
    if built.built:
        try:
            remember_meeting(db, meeting_id)
        except Exception as e:  # noqa: BLE001 - the meeting stands; a search remembers it later
            log.warning("meeting %s: its phrases are not in memory yet: %s", meeting_id, e)
    return built
