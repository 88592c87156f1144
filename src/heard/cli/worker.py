"""``heard worker``: a Celery worker for the meeting pipeline."""

from __future__ import annotations

from typing import Annotated

import typer

from heard.cli.app import app, reports_errors
from heard.cli.models import (
    ComputeTypeOption,
    DeviceOption,
    LanguageOption,
    ModelOption,
    chosen_settings,
)


@app.command()
@reports_errors
def worker(
    concurrency: Annotated[
        int, typer.Option(min=1, help="Tracks transcribed at once by this worker (processes).")
    ] = 1,
    loglevel: Annotated[str, typer.Option(help="Celery log level.")] = "INFO",
    model: ModelOption = None,
    language: LanguageOption = None,
    device: DeviceOption = None,
    compute_type: ComputeTypeOption = None,
) -> None:
    """Run a Celery worker for the meeting pipeline.

    Broker, queue and database come from $HEARD_BROKER_URL, $HEARD_QUEUE and
    $HEARD_DATABASE_URL (see docs/deployment.md). A model it cannot have stops it here; each
    of its pool processes loads the model itself, at its first track. A language given per
    track when the meeting was made wins over --language. SIGTERM stops it within
    $HEARD_WORKER_STOP_S: a track still being transcribed then goes back to the queue.
    """
    from heard.asr.models import model_files
    from heard.asr.whisper import WhisperOptions
    from heard.meetings.celery_app import check_broker, configure
    from heard.settings import default_for_libraries

    chosen = chosen_settings(model, language, device, compute_type)
    if chosen.transcriber == "faster-whisper":
        # The model's files are found (fetched, if need be) here, and not loaded: Celery forks
        # its pool from this process, and CTranslate2's threads do not survive a fork (a model
        # loaded here hangs the first track a pool process transcribes). Each pool process
        # loads its own at its first track (heard.meetings.celery_app).
        model_files(WhisperOptions.from_settings(chosen).model_name)
    celery_app = configure(chosen)
    check_broker()
    queue = celery_app.conf.task_default_queue
    # SIGTERM (systemd, Docker and Kubernetes stop a worker with it) is Celery's cold
    # shutdown, bounded by worker_soft_shutdown_timeout: a warm one waits for every track in
    # hand, an hour of audio, say. Set before the worker imports billiard.common, which reads
    # it once.
    default_for_libraries({"REMAP_SIGTERM": "SIGQUIT"})
    celery_app.worker_main(
        [
            "worker",
            f"--concurrency={concurrency}",
            f"--queues={queue}",
            f"--loglevel={loglevel}",
            "--without-gossip",
            "--without-mingle",
        ]
    )
