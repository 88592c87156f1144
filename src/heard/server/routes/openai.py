"""OpenAI's audio REST endpoints, answered by heard's recognizer.

A client written for OpenAI (its SDKs, LangChain, Pipecat's and LiveKit's OpenAI STT) points
its base URL at ``http://HOST:8000/v1`` with a heard token as its API key:

* ``POST /v1/audio/transcriptions``, OpenAI's form fields:

  * ``file`` (required): any audio FFmpeg decodes, up to the upload limit and
    ``HEARD_MAX_TRACK_S``; decoded and transcribed ten minutes at a time;
  * ``model`` (required): any name (``whisper-1``, ``gpt-4o-transcribe``,
    ``gpt-4o-mini-transcribe``, ``gpt-transcribe``...): the server's recognizer answers all;
  * ``language``: ISO 639-1, as OpenAI takes it (an English-only model takes only ``en``);
  * ``response_format``: ``json`` (default), ``text``, ``srt``, ``vtt`` or ``verbose_json``;
  * ``timestamp_granularities[]``: ``segment`` and/or ``word``, with ``verbose_json`` only;
  * ``stream=true``: the transcript as server-sent events, OpenAI's
    ``transcript.text.delta`` (one per segment, sent as it is decoded) and
    ``transcript.text.done``; a failure after the first delta is an ``error`` event;
  * ``prompt``, ``temperature``, ``include[]`` and ``chunking_strategy``: accepted and not
    used. heard decodes with beam search at temperature 0 and never conditions on earlier
    text: its guards against Whisper's hallucinations rely on both.

* ``POST /v1/audio/translations`` (``file``, ``model``, ``response_format``): the speech in
  English, by Whisper's own translation with a multilingual model; an English-only model (the
  default tiny.en) hears only English, so its transcript is the answer, and the
  ``X-Heard-Translation`` header says so.
* ``GET /v1/models`` and ``GET /v1/models/{id}``: the names the recognizer answers to.

``verbose_json`` segments carry ``id``, ``seek``, ``start``, ``end``, ``text``,
``temperature`` and ``compression_ratio``; ``tokens`` is empty, and ``avg_logprob`` and
``no_speech_prob`` are absent (heard's guards read them and keep neither). Errors come in
OpenAI's shape (``heard.server.errors``). As many files are transcribed at once as the machine
has cores for (one per core but one); the others wait their turn, the user served longest ago
first (``quotas.FairQueue``), and only past the queue is a request refused (a 429 with
Retry-After). A server shutting down stops a transcription at its next segment, and answers
503 within ``quotas.STOP_ANSWER_S`` whatever the transcription is doing; a client that hangs
up stops its transcription at its next segment too. The form counts against the user's
storage as it arrives (``bodies.SpooledFormRoute``), and the work runs at bulk priority
(``heard.work``). With
``--queue`` the server has no recognizer of its own, and these routes answer 503.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, File, Form, HTTPException, Request, UploadFile
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

from heard.asr.audio import check_duration, measure_audio
from heard.asr.transcriber import SegmentCallback, Transcriber, transcribe_each
from heard.asr.whisper import FasterWhisperTranscriber, compression_ratio, load_model
from heard.errors import (
    AudioError,
    BusyError,
    HeardError,
    InputError,
    NoRoomError,
    ServiceError,
    StoppingError,
    StoreError,
    TooLargeError,
)
from heard.server.bodies import SpooledFormRoute
from heard.server.deps import Caller, Settings
from heard.server.errors import STORE_TROUBLE, error_reply, status_of
from heard.server.quotas import HUNG_UP, FairQueue, until_stopped
from heard.server.schemas import OpenAIErrorOut
from heard.server.spool import spool_file
from heard.server.state import ServerSettings, state_of
from heard.speech import Segment, Transcription
from heard.store.users import Principal
from heard.timeline.formats import TimedPhrase, TranscriptDoc, render_srt, render_vtt
from heard.work import lower_priority

__all__ = ["MODEL_NAMES", "queue", "router"]

router = APIRouter(
    prefix="/v1",
    tags=["openai"],
    route_class=SpooledFormRoute,
    responses={
        408: {"model": OpenAIErrorOut, "description": "The body stopped arriving (20 s)."},
        429: {"model": OpenAIErrorOut, "description": "Too many bad tokens, or files waiting."},
    },
)
log = logging.getLogger("heard.server")

MODEL_NAMES = ("whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe", "gpt-transcribe",
               "gpt-realtime-whisper")  # fmt: skip
"""OpenAI's names for its recognizers (the defaults of its docs, Pipecat and LiveKit), listed
by ``/v1/models``; any other name is answered too."""
MAX_MODEL_CHARS = 200
MODEL_NAME = r"^[^\x00-\x1f\x7f]+$"
"""Any name but one with control characters (a NUL, a line break)."""
ResponseFormat = Literal["json", "text", "srt", "vtt", "verbose_json"]
Granularity = Literal["segment", "word"]
LANGUAGE_NAMES = {
    "ar": "arabic", "ca": "catalan", "cs": "czech", "da": "danish", "de": "german",
    "el": "greek", "en": "english", "es": "spanish", "fa": "persian", "fi": "finnish",
    "fr": "french", "he": "hebrew", "hi": "hindi", "hu": "hungarian", "id": "indonesian",
    "it": "italian", "ja": "japanese", "ko": "korean", "nl": "dutch", "no": "norwegian",
    "pl": "polish", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sv": "swedish",
    "th": "thai", "tr": "turkish", "uk": "ukrainian", "vi": "vietnamese", "zh": "chinese",
}  # fmt: skip
"""verbose_json names the language as OpenAI does (``english``); others keep their code."""
STARTED = int(time.time())
ENGLISH_ONLY = (
    "the server's model knows only English: the audio was taken as English and transcribed"
)


def queue(stopping: threading.Event) -> FairQueue:
    """Files transcribed at once: one per core but one (at least one, at most 16: each holds a
    request thread); the rest wait their turn."""
    return FairQueue(min(16, max(1, (os.cpu_count() or 2) - 1)), stopping=stopping)


def _invalid(message: str, param: str, code: str | None = None) -> HTTPException:
    return HTTPException(400, {"message": message, "param": param, "code": code})


def _model(name: str) -> dict[str, object]:
    return {"id": name, "object": "model", "created": STARTED, "owned_by": "heard"}


def _names(settings: ServerSettings) -> list[str]:
    names = [*MODEL_NAMES, settings.whisper.model_name]
    if settings.transcriber is not None:
        names.append(settings.transcriber.name)
    return list(dict.fromkeys(names))


@router.get("/models", responses={401: {"model": OpenAIErrorOut}})
def models(user: Caller, settings: Settings) -> dict[str, object]:
    """The model names this server answers to, as OpenAI's ``models.list`` reads them (any
    other name is answered too, by the same recognizer)."""
    return {"object": "list", "data": [_model(n) for n in _names(settings)]}


@router.get(
    "/models/{model_id:path}",
    responses={
        401: {"model": OpenAIErrorOut},
        404: {
            "model": OpenAIErrorOut,
            "description": "A name over 200 characters, or a line break.",
        },
    },
)
def model(model_id: str, user: Caller, settings: Settings) -> dict[str, object]:
    """One model, as OpenAI's ``models.retrieve`` reads it: every name is served here."""
    if len(model_id) > MAX_MODEL_CHARS:
        message = f"no model with a name over {MAX_MODEL_CHARS} characters"
        raise HTTPException(404, {"message": message, "param": "model", "code": None})
    return _model(model_id)


RESPONSES: dict[int | str, dict[str, object]] = {
    200: {
        "description": "The transcript, in the asked format (server-sent events with stream).",
        "content": {
            "application/json": {},
            "text/plain": {},
            "text/vtt": {},
            "text/event-stream": {},
        },
    },
    400: {"model": OpenAIErrorOut, "description": "A bad file, model, language or field."},
    401: {"model": OpenAIErrorOut, "description": "No valid heard token as the API key."},
    413: {"model": OpenAIErrorOut, "description": "Over the upload limit or the longest track."},
    429: {"model": OpenAIErrorOut, "description": "Too many files waiting (Retry-After)."},
    503: {"model": OpenAIErrorOut, "description": "No recognizer here (--queue), or stopping."},
    507: {"model": OpenAIErrorOut, "description": "No room on the server for the file."},
}


@router.post("/audio/transcriptions", response_model=None, responses=RESPONSES)
async def transcriptions(
    request: Request,
    user: Caller,
    settings: Settings,
    file: Annotated[UploadFile, File(description="The audio to transcribe.")],
    model: Annotated[str, Form(max_length=MAX_MODEL_CHARS, pattern=MODEL_NAME)],
    language: Annotated[str | None, Form(max_length=16)] = None,
    prompt: Annotated[str | None, Form(max_length=10_000)] = None,
    response_format: Annotated[ResponseFormat, Form()] = "json",
    temperature: Annotated[float, Form(ge=0, le=1)] = 0.0,
    timestamp_granularities: Annotated[
        list[Granularity] | None, Form(alias="timestamp_granularities[]")
    ] = None,
    stream: Annotated[bool, Form()] = False,
) -> Response:
    """Transcribe one file, as OpenAI's ``audio.transcriptions.create`` does."""
    transcriber = _recognizer(settings)
    if timestamp_granularities and response_format != "verbose_json":
        raise _invalid("timestamp_granularities[] needs response_format verbose_json",
                       "timestamp_granularities[]")  # fmt: skip
    hung_up = threading.Event()
    if stream:
        return await _streamed(request, user, settings, file, transcriber, language or None)
    heard, duration = await until_stopped(
        settings.stopping,
        lambda: _run(request, user, settings, file, transcriber, language or None, hung_up),
        client=request, hung_up=hung_up,
    )  # fmt: skip
    return _answer(heard, response_format, set(timestamp_granularities or ["segment"]), duration)


@router.post("/audio/translations", response_model=None, responses=RESPONSES)
async def translations(
    request: Request,
    user: Caller,
    settings: Settings,
    file: Annotated[UploadFile, File(description="The audio to translate into English.")],
    model: Annotated[str, Form(max_length=MAX_MODEL_CHARS, pattern=MODEL_NAME)],
    prompt: Annotated[str | None, Form(max_length=10_000)] = None,
    response_format: Annotated[ResponseFormat, Form()] = "json",
    temperature: Annotated[float, Form(ge=0, le=1)] = 0.0,
) -> Response:
    """The speech in English, as OpenAI's ``audio.translations.create`` answers it."""
    transcriber = _recognizer(settings)
    note = None
    if isinstance(transcriber, FasterWhisperTranscriber):
        if load_model(transcriber.options).multilingual:
            transcriber = FasterWhisperTranscriber(replace(transcriber.options, task="translate"))
        else:
            note = ENGLISH_ONLY
    hung_up = threading.Event()
    heard, duration = await until_stopped(
        settings.stopping,
        lambda: _run(request, user, settings, file, transcriber, None, hung_up),
        client=request, hung_up=hung_up,
    )  # fmt: skip
    answer = _answer(heard, response_format, {"segment"}, duration, task="translate")
    if note is not None:
        answer.headers["X-Heard-Translation"] = note
    return answer


def _recognizer(settings: ServerSettings) -> Transcriber:
    if settings.transcriber is None:
        raise ServiceError("this server transcribes on workers (--queue): no recognizer here")
    return settings.transcriber


def _run(
    request: Request,
    user: Principal,
    settings: ServerSettings,
    file: UploadFile,
    transcriber: Transcriber,
    language: str | None,
    hung_up: threading.Event,
    on_segment: SegmentCallback | None = None,
) -> tuple[Transcription, float]:
    """The upload measured (before its turn: a lying file holds no place), then transcribed
    in its turn, at bulk priority (``on_segment`` told of each segment as it is decoded);
    its length in seconds."""
    lower_priority()  # live decoding first
    name = file.filename or "the file"
    with _copied(file, settings.uploads) as path:
        try:
            info = measure_audio(path, settings.max_track_s)
        except AudioError as e:
            raise _invalid(str(e).replace(str(path), name), "file", "invalid_file") from None
        try:
            check_duration(info, settings.max_track_s)
        except AudioError as e:
            raise TooLargeError(str(e).replace(str(path), name)) from None

        def watched(done_s: float, total_s: float) -> None:
            if settings.stopping.is_set():
                raise StoppingError("the server is shutting down: send the file again")
            if hung_up.is_set():
                raise StoppingError(HUNG_UP)

        try:
            with state_of(request.app).transcribing.taken(user.owner, hung_up):
                if on_segment is None:
                    heard = transcriber.transcribe(path, language=language, on_progress=watched)
                else:
                    heard = transcribe_each(transcriber, path, on_segment, language=language,
                                            on_progress=watched)  # fmt: skip
        except AudioError as e:
            raise _invalid(str(e).replace(str(path), name), "file", "invalid_file") from None
        except BusyError:  # past the queue: a 429
            raise
        except InputError as e:  # a language the model does not know
            raise _invalid(str(e), "language", "unsupported_language") from None
    duration = info.duration_s or (heard.segments[-1].end if heard.segments else 0.0)
    return heard, duration


async def _streamed(
    request: Request,
    user: Principal,
    settings: ServerSettings,
    file: UploadFile,
    transcriber: Transcriber,
    language: str | None,
) -> Response:
    """OpenAI's transcription events, a delta per segment as it is decoded, then the whole
    text. The answer starts with the first segment: what fails before it (a bad file, a full
    queue, a server stopping) is an error status as without ``stream``; what fails after it
    is an ``error`` event, and the stream ends. A client that hangs up stops the work."""
    loop = asyncio.get_running_loop()
    decoded: asyncio.Queue[Segment] = asyncio.Queue()
    hung_up = threading.Event()

    def on_segment(segment: Segment) -> None:
        loop.call_soon_threadsafe(decoded.put_nowait, segment)

    work = asyncio.ensure_future(until_stopped(
        settings.stopping,
        lambda: _run(request, user, settings, file, transcriber, language, hung_up, on_segment),
        client=request, hung_up=hung_up,
    ))  # fmt: skip
    first = asyncio.ensure_future(decoded.get())
    try:
        await asyncio.wait({work, first}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        hung_up.set()
        first.cancel()
        work.add_done_callback(_left_behind)
        raise
    if not first.done():
        first.cancel()
        heard, _ = work.result()  # raises what failed before any segment: an error status
        return StreamingResponse(_events([], heard), media_type="text/event-stream")

    async def rest() -> AsyncIterator[Segment]:
        yield first.result()
        while True:
            got = asyncio.ensure_future(decoded.get())
            try:
                await asyncio.wait({work, got}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                ended = not got.done()  # the work ended (or the stream was cut): nothing more
                if ended:
                    got.cancel()
            if ended:
                break
            yield got.result()
        while not decoded.empty():  # those given before the work's end was seen
            yield decoded.get_nowait()

    async def events() -> AsyncIterator[str]:
        said: list[Segment] = []
        try:
            async for segment in rest():
                yield _delta(segment, first=not said)
                said.append(segment)
            try:
                heard, _ = work.result()
            except Exception as e:  # noqa: BLE001 - the answer has started: an event says it
                yield _failure(request.url.path, e)
                return
            for line in _events(said, heard):
                yield line
        finally:  # the client gone (or the stream cut): the work stops at its next segment
            if not work.done():
                hung_up.set()
                work.add_done_callback(_left_behind)

    return StreamingResponse(events(), media_type="text/event-stream")


def _left_behind(work: asyncio.Future[Any]) -> None:
    """Work nobody waits for any more: how it ended is read, so asyncio does not report it."""
    if not work.cancelled():
        work.exception()


def _failure(path: str, error: Exception) -> str:
    """The ``error`` event of a stream cut short, the body as OpenAI's error status has it."""
    if isinstance(error, HTTPException):
        status, detail = error.status_code, error.detail
    elif isinstance(error, StoreError):
        log.error("store: %s", error)
        status, detail = status_of(error), STORE_TROUBLE
    elif isinstance(error, HeardError) and status_of(error) != 500:
        status, detail = status_of(error), str(error)
    else:
        log.error("unexpected %s on %s", type(error).__name__, path, exc_info=error)
        status, detail = 500, "internal error"
    return _event({"type": "error", **error_reply(path, status, detail)[1]})


def _delta(segment: Segment, *, first: bool) -> str:
    delta = segment.text if first else " " + segment.text
    return _event({"type": "transcript.text.delta", "delta": delta, "logprobs": None})


def _events(said: list[Segment], heard: Transcription) -> Iterator[str]:
    """The deltas of the segments of ``heard`` not yet ``said``, the whole text, the end."""
    for i, segment in enumerate(heard.segments[len(said) :], start=len(said)):
        yield _delta(segment, first=i == 0)
    text = " ".join(s.text for s in heard.segments)
    languages = [{"code": heard.language}] if heard.language else []
    yield _event({"type": "transcript.text.done", "text": text, "logprobs": None,
                  "languages": languages})  # fmt: skip
    yield "data: [DONE]\n\n"


def _event(body: dict[str, object]) -> str:
    return f"data: {json.dumps(body)}\n\n"


class _copied:
    """The upload as a file of its own in the uploads volume, removed afterwards."""

    def __init__(self, upload: UploadFile, uploads: Path) -> None:
        self.upload, self.uploads = upload, uploads

    def __enter__(self) -> Path:
        self.path: Path | None = None
        try:
            handle, self.path = spool_file(self.uploads)
            with os.fdopen(handle, "wb") as out:
                shutil.copyfileobj(self.upload.file, out, 1024 * 1024)
        except BaseException as e:  # nothing half-written stays, and no path is said
            self.__exit__()
            if not isinstance(e, OSError):
                raise
            full = e.errno == errno.ENOSPC
            log.error("transcriptions: cannot keep an upload: %s", e)
            detail = "the server has no room for the file" if full else "cannot keep the file now"
            raise (NoRoomError if full else ServiceError)(detail) from None
        assert self.path is not None
        return self.path

    def __exit__(self, *_: object) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def _answer(
    heard: Transcription,
    response_format: str,
    granularities: set[str],
    duration: float,
    task: str = "transcribe",
) -> Response:
    text = " ".join(s.text for s in heard.segments)
    if response_format == "json":
        return JSONResponse({"text": text})
    if response_format == "text":
        return PlainTextResponse(text + "\n")
    if response_format in ("srt", "vtt"):
        language = heard.language
        doc = TranscriptDoc(
            [TimedPhrase("", s.start, s.end, s.text, language=language) for s in heard.segments]
        )
        if response_format == "srt":
            return PlainTextResponse(render_srt(doc))
        return PlainTextResponse(render_vtt(doc), media_type="text/vtt")
    body: dict[str, object] = {
        "task": task,
        "language": LANGUAGE_NAMES.get(heard.language or "", heard.language or ""),
        "duration": round(duration, 3),
        "text": text,
    }
    if "segment" in granularities:
        body["segments"] = [_segment(i, s) for i, s in enumerate(heard.segments)]
    if "word" in granularities:
        body["words"] = [
            {"word": w.text, "start": w.start, "end": w.end}
            for s in heard.segments
            for w in s.words
        ]
    return JSONResponse(body)


def _segment(i: int, segment: Segment) -> dict[str, object]:
    return {
        "id": i,
        "seek": round(segment.start * 100),
        "start": segment.start,
        "end": segment.end,
        "text": segment.text,
        "tokens": [],
        "temperature": 0.0,
        "compression_ratio": round(compression_ratio(segment.text), 3),
    }
