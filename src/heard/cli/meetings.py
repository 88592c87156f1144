"""Meeting commands: ``transcribe``, ``phrases``, ``export``, ``meetings``, ``status``."""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from heard.cli.app import OutputOption, app, check_output, reports_errors, write_output
from heard.cli.models import ComputeTypeOption, DeviceOption, ModelOption, whisper_options
from heard.errors import InputError
from heard.timeline.formats import FORMATS
from heard.timeline.phrases import INTERJECTION_THRESHOLD_S

if TYPE_CHECKING:
    from heard.store.meetings import TrackSpec

_CHANNELS = {"left": 0, "l": 0, "0": 0, "right": 1, "r": 1, "1": 1}
_OFFSET = re.compile(r"^(?:(\d+):)?(\d+(?:\.\d+)?)$")

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Database URL (default: $HEARD_DATABASE_URL or a SQLite file)."),
]
FormatOption = Annotated[
    str, typer.Option("--format", "-f", help=f"Transcript format: {', '.join(FORMATS)}.")
]


def parse_track(arg: str) -> TrackSpec:
    """``NAME=PATH[#left|#right][@OFFSET]``; OFFSET in seconds or ``M:SS``. A plain
    ``PATH[#left|#right][@OFFSET]`` (no ``NAME=``, or a file that exists by the whole name) is
    a recording of several people, to diarize: named after its file."""
    from heard.store.meetings import TrackSpec

    whole = Path(arg).expanduser()
    if "=" not in arg or whole.is_file():
        if whole.is_file():  # its name may hold '=', '@' or '#'
            path, offset_s, channel = str(whole.resolve()), 0.0, None
        else:
            path, offset_s, channel = _placed(arg, arg)
        return TrackSpec(Path(path).stem or "recording", path, offset_s, channel, speakers="auto")
    name, _, rest = arg.partition("=")
    if not name.strip() or not rest:
        raise InputError(f"track {arg!r}: expected NAME=FILE[#left|#right][@OFFSET]")
    path, offset_s, channel = _placed(arg, rest)
    return TrackSpec(name.strip(), path, offset_s, channel)


def _placed(arg: str, rest: str) -> tuple[str, float, int | None]:
    """``FILE[#left|#right][@OFFSET]`` (``rest`` of the track ``arg``): the file's absolute
    path, the offset in seconds and the channel."""
    offset_s = 0.0
    if "@" in rest:
        rest, _, offset_text = rest.rpartition("@")
        match = _OFFSET.match(offset_text.strip())
        if not match:
            raise InputError(
                f"track {arg!r}: bad offset {offset_text!r}; expected seconds (30, 12.5) or M:SS"
            )
        minutes, seconds = match.groups()
        offset_s = int(minutes or 0) * 60 + float(seconds)
    channel = None
    if "#" in rest:
        path_text, _, channel_text = rest.rpartition("#")
        if channel_text.lower() not in _CHANNELS:
            raise InputError(f"track {arg!r}: bad channel {channel_text!r}; expected left or right")
        rest, channel = path_text, _CHANNELS[channel_text.lower()]
    if not rest.strip():
        raise InputError(f"track {arg!r}: no file")
    return str(Path(rest).expanduser().resolve()), offset_s, channel


def parse_languages(args: list[str]) -> tuple[str | None, dict[str, str]]:
    """``--language`` values: the one for every track (or None) and those per participant,
    each checked against the languages Whisper knows."""
    from heard.asr.models import check_language

    everyone: str | None = None
    by_name: dict[str, str] = {}
    for arg in args:
        name, sep, code = arg.rpartition("=")
        if not sep:
            if everyone is not None:
                raise InputError(f"--language {arg!r}: a language for every track is given twice")
            everyone = check_language(code)
            continue
        if not name.strip():
            raise InputError(f"--language {arg!r}: expected LANG or NAME=LANG")
        by_name[name.strip().casefold()] = check_language(code) or ""
    return everyone, by_name


def with_speakers(
    specs: list[TrackSpec], speakers: str | None, names: str | None
) -> list[TrackSpec]:
    """``--speakers`` and ``--names`` applied to the recordings given as a plain FILE."""
    from dataclasses import replace

    from heard.diarize import check_speakers

    mixed = [i for i, s in enumerate(specs) if s.speakers is not None]
    if (speakers is not None or names is not None) and not mixed:
        raise InputError(
            "--speakers and --names are for a recording of several people: give it as FILE, "
            "without NAME= (NAME=FILE is one participant's own track)"
        )
    given = tuple(n.strip() for n in (names or "").split(",")) if names is not None else ()
    if names is not None and (len(mixed) > 1 or not all(given)):
        raise InputError(
            f"--names {names!r}: give comma-separated names (no empty one) for one recording"
        )
    count = check_speakers(speakers) if speakers is not None else "auto"
    out = list(specs)
    for i in mixed:
        out[i] = replace(specs[i], speakers=count, speaker_names=given)
    return out


def with_languages(
    specs: list[TrackSpec], everyone: str | None, by_name: dict[str, str]
) -> list[TrackSpec]:
    """Each track with the language its participant speaks: their own, else everyone's."""
    from dataclasses import replace

    names = {s.participant.strip().casefold() for s in specs}
    unknown = sorted(set(by_name) - names)
    if unknown:
        raise InputError(f"--language names {', '.join(unknown)}: no track by that name")
    return [
        replace(s, language=by_name.get(s.participant.strip().casefold()) or everyone)
        for s in specs
    ]


@app.command()
@reports_errors
def transcribe(
    tracks: Annotated[
        list[str] | None,
        typer.Argument(
            help="NAME=FILE\\[#left|#right]\\[@OFFSET]: one per participant; OFFSET is when their "
            "track starts in the meeting (seconds or M:SS); #left/#right takes one channel "
            "of a stereo file. A plain FILE is a recording of several people (see --speakers).",
            show_default=False,
        ),
    ] = None,
    title: Annotated[str, typer.Option(help="Meeting title.")] = "",
    db: DbOption = None,
    fmt: FormatOption = "txt",
    output: OutputOption = None,
    queue: Annotated[
        bool,
        typer.Option(
            "--queue",
            help="Enqueue for Celery workers ($HEARD_BROKER_URL) instead of transcribing here; "
            "prints the meeting id.",
        ),
    ] = False,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            metavar="MEETING_ID",
            help="Finish a stored meeting whose run was interrupted (killed, crashed, Ctrl-C): "
            "what was transcribed is kept, no second meeting is made.",
        ),
    ] = None,
    model: ModelOption = None,
    language: Annotated[
        list[str] | None,
        typer.Option(
            "--language",
            metavar="LANG|NAME=LANG",
            help="The language spoken (en, es, ru...): LANG for every track, NAME=LANG for one "
            "participant's (repeatable). Default: $HEARD_LANGUAGE, else detected per track by a "
            "multilingual model (English for an English-only one).",
            show_default=False,
        ),
    ] = None,
    device: DeviceOption = None,
    compute_type: ComputeTypeOption = None,
    speakers: Annotated[
        str | None,
        typer.Option(
            "--speakers",
            metavar="auto|N",
            help="How many people speak in each recording given as a plain FILE (no NAME=): a "
            "number, or auto to count them. Default: auto.",
            show_default=False,
        ),
    ] = None,
    names: Annotated[
        str | None,
        typer.Option(
            "--names",
            metavar="ANA,BOB",
            help="Names for the speakers of that recording, in the order they are first heard "
            "(default: Speaker 1, Speaker 2...).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Transcribe one track per participant and store the meeting; print its transcript.

    Example: heard transcribe alice=alice.wav bob=bob.wav@30 -f srt -o meeting.srt

    One recording of several people (a call, a room): heard transcribe call.wav --speakers 2
    --names ana,bob (who spoke when is found by diarization; a late joiner on their own line
    can be added as NAME=FILE@OFFSET)

    A meeting in two languages: heard transcribe --model base --language ana=es ana=a.wav
    bob=b.wav (bob's language is detected)
    """
    from heard.cli.meeting_jobs import enqueue, transcribe_meeting, transcribe_stored
    from heard.cli.stores import open_store, queue_database
    from heard.meetings.jobs import document
    from heard.settings import database_url
    from heard.store.database import Database
    from heard.timeline.formats import render

    FORMATS[fmt]  # reject an unknown format or output before any work
    check_output(output)
    everyone, by_name = parse_languages(language or [])
    if queue and (model or device or compute_type):
        raise InputError(
            "with --queue the workers transcribe: choose the model with `heard worker --model` "
            "(--device, --compute-type) or $HEARD_MODEL where they run"
        )
    whisper = whisper_options(model, everyone, device, compute_type)
    if speakers is not None:
        from heard.diarize import check_speakers

        check_speakers(speakers)
    if resume is not None:
        if tracks or queue or by_name or speakers or names:
            raise InputError(
                "--resume takes a stored meeting: give no tracks, no --queue, no NAME=LANG and no "
                "--speakers or --names"
            )
        database = open_store(db, resume)
        meeting_id = transcribe_stored(database, resume, whisper=whisper)
        write_output(render(document(database, meeting_id, finished=True), fmt), output)
        return
    if not tracks:
        raise InputError("give one NAME=FILE per participant, or --resume MEETING_ID")
    specs = with_speakers([parse_track(arg) for arg in tracks], speakers, names)
    specs = with_languages(specs, whisper.language, by_name)
    database = queue_database(db) if queue else Database(database_url(db))
    started = datetime.now(UTC)
    if queue:
        typer.echo(enqueue(specs, title=title, db=database, started_at=started))
        return
    meeting_id = transcribe_meeting(
        specs, title=title or f"Meeting {started:%Y-%m-%d %H:%M}", db=database, whisper=whisper,
        started_at=started,
    )  # fmt: skip
    write_output(render(document(database, meeting_id, finished=True), fmt), output)


@app.command()
@reports_errors
def phrases(
    segments: Annotated[
        Path, typer.Argument(help="Segment JSON (see docs/formats.md), or - for standard input.")
    ],
    interjection_s: Annotated[
        float,
        typer.Option(min=0, help="Shorter speech by someone else does not break a phrase."),
    ] = INTERJECTION_THRESHOLD_S,
) -> None:
    """Merge per-participant segments into phrases on one timeline; print phrase JSON."""
    from heard.timeline.phrases import build_phrases
    from heard.timeline.segments_json import read_segments

    drafts = build_phrases(read_segments(segments), interjection_threshold_s=interjection_s)
    json.dump([d.to_dict() for d in drafts], sys.stdout, ensure_ascii=False, indent=1)
    typer.echo()


@app.command()
@reports_errors
def export(
    meeting_id: Annotated[str, typer.Argument(help="Meeting id (or its first 8+ characters).")],
    db: DbOption = None,
    fmt: FormatOption = "txt",
    output: OutputOption = None,
) -> None:
    """Write a stored meeting's transcript in any format."""
    from heard.cli.stores import open_store
    from heard.meetings.jobs import document
    from heard.timeline.formats import render

    FORMATS[fmt]
    check_output(output)
    write_output(
        render(document(open_store(db, meeting_id), meeting_id, finished=True), fmt), output
    )


@app.command()
@reports_errors
def meetings(
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List stored meetings, newest first."""
    from heard.cli.stores import open_store
    from heard.store.views import list_meetings

    database = open_store(db)
    rows = list_meetings(database) if database.has_schema() else []
    if as_json:
        payload = [
            {"id": str(m.id), "title": m.title, "started_at": m.started_at.isoformat(),
             "status": str(m.status), "participants": list(m.participants), "phrases": m.phrases}
            for m in rows
        ]  # fmt: skip
        typer.echo(json.dumps(payload, indent=1))
        return
    if not rows:
        typer.echo(f"no meetings in {database.safe_url}")
    for m in rows:
        typer.echo(
            f"{m.id}  {m.started_at:%Y-%m-%d %H:%M}  {m.status:<8}  {m.phrases:>4} phrases  "
            f"{m.title}  ({', '.join(m.participants)})"
        )


@app.command()
@reports_errors
def status(
    meeting_id: Annotated[str, typer.Argument(help="Meeting id (or its first 8+ characters).")],
    db: DbOption = None,
) -> None:
    """Show a meeting's tracks: status, attempts, language and the last error.

    A language reads es (0.97) when detected with that probability, es when given, es? when
    asked for and not transcribed yet.
    """
    from heard.cli.stores import open_store
    from heard.meetings.jobs import INTERRUPTED, track_label, view

    stands = view(open_store(db, meeting_id), meeting_id)
    meeting = stands.meeting
    labels = [track_label(t) for t in stands.tracks]
    typer.echo(f"{meeting.id}  {stands.status}  {meeting.title}")
    for t, label in zip(stands.tracks, labels, strict=True):
        channel = "" if t.channel is None else f"#{'left' if t.channel == 0 else 'right'}"
        error = f"  ({t.last_error})" if t.last_error else ""
        if label == INTERRUPTED:
            error = f"  (its process {t.claimed_by} is gone){error}"
        spoken = f"  {t.language_label}" if t.language_label else ""
        if t.speakers is not None:
            found = "" if t.speakers_found is None else f", {t.speakers_found} found"
            spoken += f"  speakers {t.speakers}{found}"
        typer.echo(
            f"  {t.participant:<16} {label:<12} attempts {t.attempts}  "
            f"@{t.offset_s:g}s{spoken}  {t.location}{channel}{error}"
        )
        for warning in t.warnings:
            typer.echo(f"    warning: {warning}")
    if INTERRUPTED in labels:
        typer.echo(f"`heard transcribe --resume {str(meeting.id)[:8]}` finishes it")
