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
    $HEARD_DATABASE_URL (see docs/deployment.md). The model is loaded before the worker takes
    a task, so a model it cannot have stops it here; a language given per track when the
    meeting was made wins over --language.
    """
    from heard.asr.whisper import WhisperOptions, load_model
    from heard.meetings.celery_app import check_broker, configure

    chosen = chosen_settings(model, language, device, compute_type)
    if chosen.transcriber == "faster-whisper":
        load_model(WhisperOptions.from_settings(chosen))
    celery_app = configure(chosen)
    check_broker()
    queue = celery_app.conf.task_default_queue
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
