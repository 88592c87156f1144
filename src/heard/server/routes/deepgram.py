"""``POST /v1/listen``: Deepgram's pre-recorded transcription, answered by heard's recognizer.

A client written for Deepgram (its SDKs' ``transcribe_file``, LiveKit's Deepgram ``recognize``)
posts the audio as the raw body (any type FFmpeg decodes: WAV, FLAC, MP3, Ogg...) with a heard
token as its key (``Authorization: Token KEY`` or ``Bearer KEY``). A JSON body asking heard to
fetch a URL is refused (400): heard fetches nothing; send the audio itself.

Query parameters, Deepgram's names:

* ``model`` (any name: the server's recognizer answers, and ``metadata.model_info`` says it),
  ``language`` (``en-US`` is ``en``; as the server's model knows it), ``detect_language``
  (a multilingual model only: ``detected_language`` per channel);
* ``punctuate`` and ``smart_format`` (either: punctuated, cased text; neither, Deepgram's
  default: lower case without punctuation; ``punctuated_word`` is always punctuated);
* ``diarize``: each word's ``speaker`` from heard's diarizer;
* ``utterances`` (``utt_split`` seconds of pause, 0.8 by default, or a new speaker, start a
  new one) and ``paragraphs``;
* ``multichannel``: each channel of the file transcribed on its own;
* ``numerals``, ``filler_words``, ``profanity_filter``, ``keyterm``, ``keywords``, ``tag``,
  ``version``, ``mip_opt_out``... are accepted and have no effect; asking for what heard does
  not do (``summarize``, ``topics``, ``intents``, ``sentiment``, ``detect_entities``,
  ``redact``, ``search``, ``replace``, ``callback``) is a 400 naming it.

Files wait their turn with OpenAI's route (one queue, fair per user); errors are Deepgram's
``{"err_code", "err_msg", "request_id"}``.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from heard.asr.audio import check_duration, measure_audio
from heard.asr.streaming import strip_punctuation
from heard.asr.whisper import FasterWhisperTranscriber, load_model
from heard.diarize.turns import Diarization, speaker_words
from heard.errors import (
    AudioError,
    BusyError,
    HeardError,
    InputError,
    StoppingError,
    TooLargeError,
)
from heard.server.bodies import arriving
from heard.server.deps import Caller, Settings
from heard.server.errors import deepgram_error, status_of
from heard.server.quotas import HUNG_UP, until_stopped
from heard.server.schemas import DeepgramErrorOut
from heard.server.spool import spool_file
from heard.server.state import ServerSettings, state_of
from heard.speech import Segment, Word
from heard.work import lower_priority

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["deepgram"])

NO_EFFECT = frozenset({"model", "version", "numerals", "filler_words", "profanity_filter",
                       "keyterm", "keywords", "tag", "mip_opt_out", "dictation", "measurements",
                       "encoding", "extra", "language_hint", "diarize_model", "utt_split",
                       "paragraphs", "utterances", "punctuate", "smart_format", "diarize",
                       "multichannel", "language", "detect_language", "sample_rate",
                       "channels"})  # fmt: skip
"""Names taken (the ones heard uses are read below; the rest have no effect)."""
NOT_DONE = frozenset({"summarize", "topics", "intents", "sentiment", "detect_entities",
                      "redact", "search", "replace", "callback", "custom_topic",
                      "custom_intent"})  # fmt: skip
SENTENCE_END = re.compile(r"[.!?]$")


def _flag(params: dict[str, str], name: str) -> bool:
    value = params.get(name, "false").lower()
    if value not in ("true", "false"):
        raise InputError(f"{name}={value[:40]!r}: true or false")
    return value == "true"


def _error(
    status: int, message: str, request_id: str, retry_after_s: float | None = None
) -> JSONResponse:
    body = {**deepgram_error(status, message), "request_id": request_id}
    headers = {"Retry-After": str(max(1, math.ceil(retry_after_s)))} if retry_after_s else None
    return JSONResponse(body, status_code=status, headers=headers)


@router.post(
    "/listen",
    responses={
        200: {"description": "Deepgram's response: metadata and results."},
        400: {"model": DeepgramErrorOut, "description": "Not audio, or an option not done."},
        401: {"description": "No valid heard token as the key."},
        408: {"model": DeepgramErrorOut, "description": "The body stopped arriving."},
        413: {"description": "Over the upload limit or the longest track."},
        429: {"model": DeepgramErrorOut, "description": "Too many files waiting."},
        503: {"model": DeepgramErrorOut, "description": "No recognizer here, or stopping."},
        507: {
            "model": DeepgramErrorOut,
            "description": "No room for the audio, or past the user's storage.",
        },
    },
    openapi_extra={"requestBody": {"content": {"application/octet-stream": {}}}},
)
async def listen(request: Request, user: Caller, settings: Settings) -> JSONResponse:
    """Transcribe the audio in the body, as Deepgram's ``/v1/listen`` does."""
    request_id = str(uuid.uuid4())
    params = {k: v for k, v in request.query_params.items()}
    asked = sorted(k for k in NOT_DONE if k in params and params[k].lower() != "false")
    unknown = sorted(set(params) - NO_EFFECT - NOT_DONE)
    if asked or unknown:
        named = ", ".join((asked + unknown)[:5])[:200]
        return _error(400, f"not supported here: {named}", request_id)
    if request.headers.get("content-type", "").startswith("application/json"):
        return _error(400, "heard fetches no URL: send the audio itself as the body", request_id)
    if settings.transcriber is None:
        no = "this server transcribes on workers (--queue): no recognizer here"
        return _error(503, no, request_id)
    async with state_of(request.app).uploads.counted(user.owner) as count:
        try:
            path = await _kept(request, settings, count)
        except HeardError as e:  # over the user's storage, or the body stopped coming
            return _error(status_of(e), str(e), request_id)
        if path is None:
            return _error(507, "the server has no room for the audio", request_id)
        try:
            if path.stat().st_size == 0:
                raise InputError("the body is empty: send the audio as the body")
            hung_up = threading.Event()
            body = await until_stopped(
                settings.stopping,
                lambda: _transcribe(request, user.owner, settings, path, params, hung_up),
                client=request, hung_up=hung_up,
            )  # fmt: skip
        except HeardError as e:
            # Deepgram answers what it cannot take with a 400 (heard's own routes: a 422)
            took = isinstance(e, InputError) and not isinstance(e, (BusyError, TooLargeError))
            status = 400 if took else status_of(e)
            wait = e.retry_after_s if isinstance(e, BusyError) else None
            return _error(status, str(e).replace(str(path), "the body"), request_id, wait)
        finally:
            path.unlink(missing_ok=True)
    body["metadata"]["request_id"] = request_id
    return JSONResponse(body)


async def _kept(
    request: Request, settings: ServerSettings, count: Callable[[int], None]
) -> Path | None:
    """The body in a file of its own in the uploads volume (the caller removes it), each
    piece ``count``ed in the user's storage before it is written; None when the server has no
    room for it. Nothing is left behind: not when the user has no room left
    (``NoRoomError``), nor when the body stops arriving (``SlowBodyError``)."""
    try:
        handle, path = spool_file(settings.uploads)
    except OSError:
        return None
    try:
        with open(handle, "wb") as out:
            async for chunk in arriving(request.stream()):
                count(len(chunk))
                out.write(chunk)
    except OSError:
        path.unlink(missing_ok=True)
        return None
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def _transcribe(
    request: Request,
    owner: str,
    settings: ServerSettings,
    path: Path,
    params: dict[str, str],
    hung_up: threading.Event,
) -> dict[str, Any]:
    lower_priority()  # live decoding first
    transcriber = settings.transcriber
    assert transcriber is not None
    language = params.get("language", "").split("-")[0].lower() or None
    detect = _flag(params, "detect_language")
    if detect and isinstance(transcriber, FasterWhisperTranscriber):
        if not load_model(transcriber.options).multilingual:
            raise InputError("detect_language needs a multilingual model (heard serve "
                             "--model base); the server's knows only English")  # fmt: skip
        language = None
    punctuated = _flag(params, "punctuate") or _flag(params, "smart_format")
    split_s = float(params["utt_split"]) if _number(params.get("utt_split")) else 0.8
    asked = {name: _flag(params, name) for name in ("multichannel", "diarize", "paragraphs",
                                                    "utterances")}  # fmt: skip

    def watched(done_s: float, total_s: float) -> None:
        if settings.stopping.is_set():
            raise StoppingError("the server is shutting down: send the audio again")
        if hung_up.is_set():  # LiveKit's client gives up at 10 s and sends the file again
            raise StoppingError(HUNG_UP)

    info = measure_audio(path, settings.max_track_s)  # AudioError: a 400 naming the body
    try:
        check_duration(info, settings.max_track_s)
    except AudioError as e:  # longer than a track may be: a 413, as the docs say
        raise TooLargeError(str(e)) from None
    with state_of(request.app).transcribing.taken(owner, hung_up):  # options checked before
        channels = range(info.channels) if asked["multichannel"] else [None]
        heard = [transcriber.transcribe(path, channel=c, language=language, on_progress=watched)
                 for c in channels]  # fmt: skip
        found_turns = _diarize(path) if asked["diarize"] else None
    sha = _sha256(path)
    model = params.get("model", settings.whisper.model_name)[:80]
    model_uuid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"heard:{model}"))
    results: dict[str, Any] = {"channels": []}
    all_words: list[dict[str, Any]] = []
    for c, transcription in enumerate(heard):
        if found_turns is None:
            words = [_word(w, None) for s in transcription.segments for w in s.words]
        else:  # the speakers and times heard's own transcript gives its words
            words = [_word(w, k) for w, k in speaker_words(transcription.segments, found_turns)]
        alternative: dict[str, Any] = {
            "transcript": _text(transcription.segments, punctuated),
            "confidence": _confidence(words),
            "words": words,
        }
        if asked["paragraphs"]:
            alternative["paragraphs"] = _paragraphs(words, alternative["transcript"])
        found: dict[str, Any] = {"alternatives": [alternative]}
        if detect:
            found["detected_language"] = transcription.language
            found["language_confidence"] = transcription.language_probability
        results["channels"].append(found)
        all_words += [{**w, "channel": c} for w in words]
    if asked["utterances"]:
        results["utterances"] = _utterances(all_words, split_s)
    metadata: dict[str, Any] = {
        "transaction_key": "deprecated",
        "request_id": "",
        "sha256": sha,
        "created": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "duration": round(info.duration_s or 0.0, 3),
        "channels": len(heard),
        "models": [model_uuid],
        "model_info": {model_uuid: {"name": model, "version": "heard", "arch": "whisper"}},
    }
    warned = [w for transcription in heard for w in transcription.warnings]
    if warned:  # Deepgram's own shape for what a reader should know
        metadata["warnings"] = [{"parameter": "model", "type": "unsupported_language",
                                 "message": w} for w in dict.fromkeys(warned)]  # fmt: skip
    return {"metadata": metadata, "results": results}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def _number(value: str | None) -> bool:
    try:
        return value is not None and 0 < float(value) < 60
    except ValueError:
        return False


def _diarize(path: Path) -> Diarization:
    """Who spoke when, from heard's diarizer."""
    from heard.diarize import default_diarizer

    return default_diarizer().diarize(path)


def _word(w: Word, speaker: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "word": strip_punctuation(w.text),
        "start": w.start,
        "end": w.end,
        "confidence": w.probability,
        "punctuated_word": w.text,
    }
    if speaker is not None:
        out["speaker"] = speaker
        out["speaker_confidence"] = 1.0
    return out


def _text(segments: tuple[Segment, ...], punctuated: bool) -> str:
    text = " ".join(s.text for s in segments)
    return text if punctuated else strip_punctuation(text)


def _confidence(words: list[dict[str, Any]]) -> float:
    return round(sum(w["confidence"] for w in words) / len(words), 4) if words else 0.0


def _runs(words: list[dict[str, Any]], split_s: float) -> list[list[dict[str, Any]]]:
    """Words cut where a pause of ``split_s`` or a new speaker (or channel) comes."""
    runs: list[list[dict[str, Any]]] = []
    for w in sorted(words, key=lambda w: (w.get("channel", 0), w["start"])):
        last = runs[-1][-1] if runs else None
        if (
            last is None
            or w["start"] - last["end"] >= split_s
            or w.get("speaker") != last.get("speaker")
            or w.get("channel") != last.get("channel")
        ):
            runs.append([w])
        else:
            runs[-1].append(w)
    return runs


def _utterances(words: list[dict[str, Any]], split_s: float) -> list[dict[str, Any]]:
    out = []
    for run in _runs(words, split_s):
        out.append({
            "start": run[0]["start"],
            "end": run[-1]["end"],
            "confidence": _confidence(run),
            "channel": run[0].get("channel", 0),
            "transcript": " ".join(w["punctuated_word"] for w in run),
            "words": [{k: v for k, v in w.items() if k != "channel"} for w in run],
            "speaker": run[0].get("speaker", 0),
            "id": str(uuid.uuid4()),
        })  # fmt: skip
    return out


def _paragraphs(words: list[dict[str, Any]], transcript: str) -> dict[str, Any]:
    paragraphs = []
    for run in _runs(words, 2.0):
        sentences, current = [], []
        for w in run:
            current.append(w)
            if SENTENCE_END.search(w["punctuated_word"]) or w is run[-1]:
                text = " ".join(x["punctuated_word"] for x in current)
                sentences.append(
                    {"text": text, "start": current[0]["start"], "end": current[-1]["end"]}
                )
                current = []
        paragraphs.append({"sentences": sentences, "speaker": run[0].get("speaker", 0),
                           "num_words": len(run), "start": run[0]["start"],
                           "end": run[-1]["end"]})  # fmt: skip
    return {"transcript": transcript, "paragraphs": paragraphs}
