"""``heard worker``: a Celery worker for the meeting pipeline."""

from __future__ import annotations

from typing import Annotated

import typer

from heard.cli.app import app, reports_errors


@app.command()
@reports_errors
def worker(
    concurrency: Annotated[
        int, typer.Option(min=1, help="Tracks transcribed at once by this worker (processes).")
    ] = 1,
    loglevel: Annotated[str, typer.Option(help="Celery log level.")] = "INFO",
) -> None:
    """Run a Celery worker for the meeting pipeline.

    Broker, queue and database come from $HEARD_BROKER_URL, $HEARD_QUEUE and
    $HEARD_DATABASE_URL (see README, "Deploy").
    """
    from heard.pipeline.celery_app import check_broker, configure

    celery_app = configure()
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
