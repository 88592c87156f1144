"""``POST /v1/audio/transcriptions``: OpenAI's transcription endpoint, answered by heard.

A client written for OpenAI (its SDKs, LangChain, scripts) points its base URL at
``http://HOST:8000/v1`` with a heard token as its API key. The form fields are OpenAI's:

* ``file`` (required): any audio FFmpeg decodes, up to the upload limit and
  ``HEARD_MAX_TRACK_S``; decoded and transcribed ten minutes at a time;
* ``model`` (required): ``whisper-1`` (OpenAI's name, taken for the server's recognizer), the
  server's model (``tiny.en``) or its transcriber's name (``faster-whisper:tiny.en``);
* ``language``: ISO 639-1, as OpenAI takes it (an English-only model takes only ``en``);
* ``response_format``: ``json`` (default), ``text``, ``srt``, ``vtt`` or ``verbose_json``;
* ``timestamp_granularities[]``: ``segment`` and/or ``word``, with ``verbose_json`` only;
* ``prompt`` and ``temperature``: accepted and not used. heard decodes with beam search at
  temperature 0 and never conditions on earlier text: its guards against Whisper's
  hallucinations rely on both.

``verbose_json`` segments carry ``id``, ``seek``, ``start``, ``end``, ``text``,
``temperature`` and ``compression_ratio``; ``tokens`` is empty, and ``avg_logprob`` and
``no_speech_prob`` are absent (heard's guards read them and keep neither). Errors come in
OpenAI's shape (``heard.server.errors``). One file per user at a time, and as many at once as
the machine has cores for; a server shutting down stops a transcription at its next segment
(a 503). With ``--queue`` the server has no recognizer of its own, and this route answers 503.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, File, Form, HTTPException, Request, UploadFile
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from heard.asr.audio import check_duration, probe_audio
from heard.asr.whisper import compression_ratio
from heard.errors import AudioError, InputError, StoppingError
from heard.server.deps import Caller, Settings
from heard.server.quotas import Slots
from heard.server.schemas import OpenAIErrorOut
from heard.speech import Segment, Transcription
from heard.timeline.formats import TimedPhrase, TranscriptDoc, render_srt, render_vtt

__all__ = ["router", "slots"]

router = APIRouter(prefix="/v1/audio", tags=["openai"])
log = logging.getLogger("heard.server")

OPENAI_MODEL = "whisper-1"
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


def slots() -> Slots:
    """Files transcribed at once: one per core but one, at least one."""
    return Slots(max(1, (os.cpu_count() or 2) - 1))


def _invalid(message: str, param: str, code: str | None = None) -> HTTPException:
    return HTTPException(400, {"message": message, "param": param, "code": code})


@router.post(
    "/transcriptions",
    response_model=None,
    responses={
        200: {
            "description": "The transcript, in the asked format.",
            "content": {"application/json": {}, "text/plain": {}, "text/vtt": {}},
        },
        400: {"model": OpenAIErrorOut, "description": "A bad file, model, language or field."},
        401: {"model": OpenAIErrorOut, "description": "No valid heard token as the API key."},
        413: {
            "model": OpenAIErrorOut,
            "description": "Over the upload limit or the longest track.",
        },
        429: {
            "model": OpenAIErrorOut,
            "description": "This user's file, or the server's, is being transcribed.",
        },
        503: {
            "model": OpenAIErrorOut,
            "description": "No recognizer here (--queue), or shutting down.",
        },
    },
)
def transcriptions(
    request: Request,
    user: Caller,
    settings: Settings,
    file: Annotated[UploadFile, File(description="The audio to transcribe.")],
    model: Annotated[str, Form()],
    language: Annotated[str | None, Form(max_length=16)] = None,
    prompt: Annotated[str | None, Form(max_length=10_000)] = None,
    response_format: Annotated[ResponseFormat, Form()] = "json",
    temperature: Annotated[float, Form(ge=0, le=1)] = 0.0,
    timestamp_granularities: Annotated[
        list[Granularity] | None, Form(alias="timestamp_granularities[]")
    ] = None,
) -> Response:
    """Transcribe one file, as OpenAI's ``audio.transcriptions.create`` does."""
    transcriber = settings.transcriber
    if transcriber is None:
        raise HTTPException(503, "this server transcribes on workers (--queue): no recognizer here")
    accepted = {OPENAI_MODEL, settings.whisper.model_name, transcriber.name}
    if model not in accepted:
        raise _invalid(f"model {model!r} is not served here; use one of: "
                       f"{', '.join(sorted(accepted))}", "model", "model_not_found")  # fmt: skip
    if timestamp_granularities and response_format != "verbose_json":
        raise _invalid("timestamp_granularities[] needs response_format verbose_json",
                       "timestamp_granularities[]")  # fmt: skip
    name = file.filename or "the file"
    with request.app.state.transcribing.taken(user.owner), _copied(file, settings.uploads) as path:
        try:
            info = probe_audio(path)
        except AudioError as e:
            raise _invalid(str(e).replace(str(path), name), "file", "invalid_file") from None
        try:
            check_duration(info, settings.max_track_s)
        except AudioError as e:
            raise HTTPException(413, str(e).replace(str(path), name)) from None

        def watched(done_s: float, total_s: float) -> None:
            if settings.stopping.is_set():
                raise StoppingError("the server is shutting down: send the file again")

        try:
            heard = transcriber.transcribe(path, language=language or None, on_progress=watched)
        except AudioError as e:
            raise _invalid(str(e).replace(str(path), name), "file", "invalid_file") from None
        except InputError as e:  # a language the model does not know
            raise _invalid(str(e), "language", "unsupported_language") from None
    duration = info.duration_s or (heard.segments[-1].end if heard.segments else 0.0)
    return _answer(heard, response_format, set(timestamp_granularities or ["segment"]), duration)


class _copied:
    """The upload as a file of its own in the uploads volume, removed afterwards."""

    def __init__(self, upload: UploadFile, uploads: Path) -> None:
        self.upload, self.uploads = upload, uploads

    def __enter__(self) -> Path:
        folder = self.uploads / ".transcriptions"
        folder.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=folder, suffix=".audio")
        self.path = Path(name)
        try:
            with os.fdopen(handle, "wb") as out:
                shutil.copyfileobj(self.upload.file, out, 1024 * 1024)
        except OSError as e:  # a full disk: nothing half-written stays, and no path is said
            self.path.unlink(missing_ok=True)
            full = e.errno == errno.ENOSPC
            log.error("transcriptions: cannot keep an upload: %s", e)
            detail = "the server has no room for the file" if full else "cannot keep the file now"
            raise HTTPException(507 if full else 503, detail) from None
        return self.path

    def __exit__(self, *_: object) -> None:
        self.path.unlink(missing_ok=True)


def _answer(
    heard: Transcription, response_format: str, granularities: set[str], duration: float
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
        "task": "transcribe",
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
