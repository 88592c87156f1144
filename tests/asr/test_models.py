"""Any model, any language, any device: the multilingual base model on real (espeak-ng)
Spanish beside real English, each track keeping its language from the store to every format,
and every way a model choice can go wrong as one line."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from heard.asr import FasterWhisperTranscriber, WhisperOptions, installed_models, load_model
from heard.asr import models as model_store
from heard.asr.streaming import WhisperStreamingRecognizer
from heard.errors import ModelError
from heard.transcript.events import EventKind
from tests.asr.test_whisper import JFK, words_of
from tests.cli.run import heard, held_port

pytestmark = pytest.mark.asr

SPANISH = "Buenos días a todos. Vamos a revisar el plan de lanzamiento de la aplicación móvil."
SPANISH_WORDS = {"buenos", "días", "todos", "plan", "lanzamiento", "aplicación"}
"""Words the base model gets on espeak-ng's Spanish voice ("revisar" and "móvil" it misses)."""
JFK_WORDS = {"americans", "country", "fellow", "ask"}


def cuda_available() -> bool:
    import ctranslate2

    return ctranslate2.get_cuda_device_count() > 0


@pytest.fixture(scope="module")
def spanish(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("espeak-ng") is None:
        pytest.fail("espeak-ng is missing: run the tests through tools/test.sh, which installs it")
    path = tmp_path_factory.mktemp("es") / "ana.wav"
    subprocess.run(["espeak-ng", "-v", "es", "-s", "140", "-w", str(path), SPANISH], check=True)
    return path


@pytest.fixture(scope="module")
def base() -> FasterWhisperTranscriber:
    return FasterWhisperTranscriber(WhisperOptions(model="base"))


@pytest.mark.system
def test_the_multilingual_model_detects_and_transcribes_spanish(
    spanish: Path, base: FasterWhisperTranscriber
) -> None:
    heard_it = base.transcribe(spanish)
    assert heard_it.language == "es"
    assert heard_it.language_probability is not None
    assert heard_it.language_probability > 0.8
    assert len(words_of(heard_it.text) & SPANISH_WORDS) >= 4, heard_it.text
    # the same model on English: detected as such, word for word as tiny.en
    english = base.transcribe(JFK)
    assert english.language == "en"
    assert len(words_of(english.text) & JFK_WORDS) == len(JFK_WORDS)
    # a language given is the transcript's, with no detection probability
    given = base.transcribe(spanish, language="es")
    assert (given.language, given.language_probability) == ("es", None)
    assert len(words_of(given.text) & SPANISH_WORDS) >= 4


def test_an_english_model_says_english_and_refuses_any_other_language() -> None:
    tiny = FasterWhisperTranscriber()
    heard_it = tiny.transcribe(JFK)
    assert (heard_it.language, heard_it.language_probability) == ("en", None)
    with pytest.raises(ModelError, match=r"tiny.en' knows only English, not 'es'"):
        tiny.transcribe(JFK, language="es")
    with pytest.raises(ModelError, match="knows only English"):
        tiny.prepare(["en", "es"])


@pytest.mark.system
def test_a_meeting_keeps_each_participants_language_in_status_and_every_format(
    tmp_path: Path, spanish: Path
) -> None:
    # ana's Spanish is given, bob's English detected
    ran = heard("transcribe", "--model", "base", "--language", "ana=es", f"ana={spanish}",
                f"bob={JFK}", "--title", "dos idiomas", "-f", "json", cwd=tmp_path)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    phrases = json.loads(ran.stdout)
    by_speaker: dict[str, set[str]] = {}
    for p in phrases:
        by_speaker.setdefault(p["participant"], set()).add(p["language"])
    assert by_speaker == {"ana": {"es"}, "bob": {"en"}}
    ana_text = " ".join(p["text"] for p in phrases if p["participant"] == "ana")
    assert len(words_of(ana_text) & SPANISH_WORDS) >= 4

    meeting = json.loads(heard("meetings", "--json", cwd=tmp_path).stdout)[0]["id"]
    status = heard("status", meeting, cwd=tmp_path).stdout.splitlines()
    ana = next(line for line in status if line.strip().startswith("ana"))
    bob = next(line for line in status if line.strip().startswith("bob"))
    assert re.search(r"@0s  es  ", ana), ana  # given: no probability
    assert re.search(r"@0s  en \((0\.[5-9]\d|1\.00)\)  ", bob), bob  # detected, with it

    vtt = heard("export", meeting, "-f", "vtt", cwd=tmp_path).stdout
    assert "NOTE Languages: ana es (given); bob en (detected, " in vtt
    assert "<v ana><lang es>" in vtt
    assert "<v bob><lang en>" in vtt
    srt = heard("export", meeting, "-f", "srt", cwd=tmp_path).stdout
    assert "ana [es]: " in srt
    assert "bob [en]: " in srt


@pytest.mark.system
def test_streaming_detects_the_language_once_and_keeps_it(spanish: Path) -> None:
    from heard.asr.audio import load_audio

    recognizer = WhisperStreamingRecognizer(whisper=WhisperOptions(model="base"))
    assert recognizer.language is None  # to be detected
    samples = load_audio(spanish)
    finals = []
    for i in range(0, len(samples), 8000):
        found = recognizer.push(samples[i : i + 8000])
        finals += [d.text for d in found if d.kind is EventKind.FINAL]
    finals += [d.text for d in recognizer.finish()]
    assert recognizer.language == "es"
    assert len(words_of(" ".join(finals)) & SPANISH_WORDS) >= 4
    # tiny.en streams in English whatever it hears
    assert WhisperStreamingRecognizer().language == "en"


@pytest.mark.system
def test_the_live_socket_recognizes_with_the_servers_model(tmp_path: Path, spanish: Path) -> None:
    """`heard serve --model base`: the live socket's audio is heard in Spanish."""
    from websockets.sync.client import connect

    from heard.asr.audio import load_audio
    from heard.server.app import ServerSettings, create_app
    from heard.store.database import Database
    from heard.store.users import add_user
    from tests.server.threaded import serving

    db = Database(f"sqlite:///{tmp_path / 'h.db'}")
    base = WhisperOptions(model="base")
    app = create_app(ServerSettings(db, tmp_path / "up", workspaces=tmp_path / "m", whisper=base))
    _, token = add_user(db, "ana")
    pcm = (load_audio(spanish) * 32767).astype("<i2").tobytes()
    finals: list[str] = []
    try:
        with serving(app) as host, connect(f"ws://{host}/v1/live?token={token}") as ws:
            for i in range(0, len(pcm), 3200):
                ws.send(pcm[i : i + 3200])
            ws.send('{"type": "end"}')
            while len(words_of(" ".join(finals)) & SPANISH_WORDS) < 4:
                try:
                    message = json.loads(ws.recv(timeout=60))
                except TimeoutError:
                    break
                if message["type"] == "final":
                    finals.append(message["text"])
    finally:
        db.dispose()
    assert len(words_of(" ".join(finals)) & SPANISH_WORDS) >= 4, finals


def test_each_model_device_and_compute_type_is_loaded_once() -> None:
    a = load_model(WhisperOptions())
    assert load_model(WhisperOptions(language="en", beam_size=1)) is a  # decoding options
    assert load_model(WhisperOptions(model="tiny.en", device="cpu", compute_type="int8")) is a
    other = load_model(WhisperOptions(compute_type="float32"))
    assert other is not a
    assert other.compute_type == "float32"
    assert load_model(WhisperOptions(compute_type="float32")) is other


def test_a_model_is_resolved_once_not_on_every_transcription(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import heard.asr.whisper as whisper_module

    resolved: list[str] = []
    real = whisper_module.model_files
    monkeypatch.setattr(whisper_module, "model_files", lambda n: resolved.append(n) or real(n))
    options = WhisperOptions(model="tiny.en", compute_type="int8_float32")  # a choice of its own
    transcriber = FasterWhisperTranscriber(options)
    for _ in range(3):
        transcriber.transcribe(JFK)
    WhisperStreamingRecognizer(whisper=options)
    assert resolved == ["tiny.en"]  # a hub name would be asked of the hub each time


def test_models_lists_the_bundled_models_with_languages_and_size() -> None:
    names = {m.name: m for m in installed_models()}
    assert names["tiny.en"].languages == "English"
    assert names["base"].languages == "99 languages"  # heard[multilingual] is part of dev
    assert names["base"].size_bytes > 140_000_000
    listed = heard("models")
    assert listed.returncode == 0
    assert any(
        line.startswith("base") and "99 languages" in line for line in listed.stdout.splitlines()
    )
    as_json = json.loads(heard("models", "--json").stdout)
    assert {m["name"] for m in as_json} >= {"tiny.en", "base"}


def test_a_joined_model_that_is_not_the_recorded_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "pkg"
    data.mkdir()
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        (data / name).write_text("{}")
    part1, part2 = data / "model.bin.part1", data / "model.bin.part2"
    part1.write_bytes(b"\0" * 1000)
    part2.write_bytes(b"\1" * 1000)
    monkeypatch.setattr(model_store, "_cache_folder", lambda: tmp_path / "cache")
    monkeypatch.setattr(
        model_store, "_package_file", lambda dist, rel: part1 if rel.endswith("1") else part2
    )
    with pytest.raises(ModelError, match="do not match the model heard was tested with"):
        model_store.model_files("base")
    joined = tmp_path / "cache" / f"whisper-base-{model_store._BASE_SHA256[:12]}"
    assert not (joined / "model.bin").exists()  # nothing half-written is left to be loaded
    assert not list(joined.glob(".model.bin.*"))


BAD_CHOICES = [
    (["--model", "no-such-model"], "model 'no-such-model': unknown"),
    (["--model", "heard-tests/no-such-repo"], "model 'heard-tests/no-such-repo' is not on this"),
    (["--model", "./missing-folder"], "model './missing-folder': no such folder"),
    (["--model", "."], "model '.': the folder has no model.bin"),
    (["--language", "xx"], "language 'xx': not one Whisper knows"),
    (["--language", "es"], "model 'tiny.en' knows only English, not 'es'"),
    (["--device", "tpu"], "device 'tpu': expected one of auto, cpu, cuda"),
    (["--compute-type", "int3"], "compute type 'int3': expected one of"),
]


@pytest.mark.parametrize(("args", "message"), BAD_CHOICES)
def test_every_model_error_is_one_line_and_nothing_is_stored(
    tmp_path: Path, args: list[str], message: str
) -> None:
    ran = heard("transcribe", *args, f"bob={JFK}", cwd=tmp_path)
    assert ran.returncode == 2
    assert ran.stderr.startswith(f"heard: error: {message}"), ran.stderr
    assert ran.stderr.count("\n") == 1
    assert (
        not (tmp_path / "m.db").exists() or "no meetings" in heard("meetings", cwd=tmp_path).stdout
    )


@pytest.mark.parametrize("command", ["stream", "serve", "worker"])
def test_the_other_commands_refuse_a_bad_model_in_one_line(tmp_path: Path, command: str) -> None:
    """``heard serve`` says what is wrong with its model before it takes its port: on a port
    another program holds (a user's own server, issue 70), the model is still what it names."""
    with held_port() as port:
        args = {"stream": [str(JFK)], "serve": ["--port", str(port)]}.get(command, [])
        ran = heard(command, "--model", "no-such-model", *args, cwd=tmp_path)
    assert ran.returncode == 2
    assert ran.stderr.startswith("heard: error: model 'no-such-model': unknown")
    assert ran.stderr.count("\n") == 1


def test_cuda_without_a_gpu_is_one_line() -> None:
    if cuda_available():
        pytest.skip("this machine has a CUDA GPU: test_cuda_when_there_is_a_gpu runs instead")
    ran = heard("transcribe", "--device", "cuda", f"bob={JFK}")
    assert ran.returncode == 2
    assert (
        ran.stderr == "heard: error: device 'cuda': no CUDA GPU is visible here; use "
        "--device cpu or auto\n"
    )


def test_cuda_when_there_is_a_gpu() -> None:
    if not cuda_available():
        pytest.skip("no CUDA GPU on this machine")
    cuda = FasterWhisperTranscriber(WhisperOptions(device="cuda"))
    assert cuda.model.device == "cuda"
    assert cuda.model.compute_type == "float16"
    assert len(words_of(cuda.transcribe(JFK).text) & JFK_WORDS) == len(JFK_WORDS)
    assert load_model(WhisperOptions(device="auto")).device == "cuda"
