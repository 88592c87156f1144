"""What starting heard costs: CPU seconds per command beside ``python -c pass``, same run.

Every CLI call pays its start-up before any work: the interpreter, then what the package and
the command import. CPU time (user + system, from the child's rusage) is the main figure;
wall time, which on a shared 2-core machine also measures the neighbours, is shown beside
it. Each command runs ``--repeat`` times, alternating with the others; medians are reported.

Two commands do real work: ``heard memory recall`` on a memory of 600 LoCoMo turns (the
first 600 of tests/data/locomo, ingested once with their MiniLM vectors), lexical and, when
``heard[dense]`` is installed, with the dense scout.

Usage: python bench/startup.py [--repeat 9] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from heard.memory.dense import default_embedder
from heard.samples import sample_path

LOCOMO = Path(__file__).resolve().parents[1] / "tests" / "data" / "locomo" / "locomo-dev.json"
QUESTION = "When did Caroline go to the LGBTQ support group?"
CHILD_ENV = {**os.environ, "HEARD_DENSE": "1"}
"""The rows say --dense or --lexical themselves; the setting must not veto the former."""


def cli() -> list[str]:
    heard = shutil.which("heard")
    return [heard] if heard else [sys.executable, "-m", "heard"]


def memory_of_600_turns(folder: Path) -> str:
    """A SQLite memory holding the first 600 LoCoMo dev turns (with vectors when the dense
    extra is installed); its URL."""
    turns = []
    for conv in json.loads(LOCOMO.read_text(encoding="utf-8")):
        for key, value in conv["conversation"].items():
            if key.startswith("session_") and not key.endswith("date_time"):
                turns += [
                    {"id": f"{conv['sample_id']}:{t['dia_id']}", "speaker": t["speaker"],
                     "text": t["text"], "session": f"{conv['sample_id']}:{key}"}
                    for t in value
                ]  # fmt: skip
    lines = folder / "turns.jsonl"
    lines.write_text("".join(json.dumps(t) + "\n" for t in turns[:600]), encoding="utf-8")
    url = f"sqlite:///{folder / 'memory.db'}"
    how = "--dense" if default_embedder(True) is not None else "--lexical"
    subprocess.run([*cli(), "memory", "ingest", str(lines), "--db", url, how], check=True,
                   stdout=subprocess.DEVNULL, env=CHILD_ENV)  # fmt: skip
    return url


def commands(memory_url: str) -> dict[str, list[str]]:
    cli_ = cli()
    recall = [*cli_, "memory", "recall", QUESTION, "--db", memory_url]
    dense = {"heard memory recall, 600 turns, dense": [*recall, "--dense"]}
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "python -c 'import heard'": [sys.executable, "-c", "import heard"],
        "heard --help": [*cli_, "--help"],
        "heard transcribe --help": [*cli_, "transcribe", "--help"],
        "heard memory recall --help": [*cli_, "memory", "recall", "--help"],
        "heard replay jfk_partials.jsonl": [
            *cli_,
            "replay",
            str(sample_path("jfk_partials.jsonl")),
        ],
        "heard memory recall, 600 turns, lexical": [*recall, "--lexical"],
        **(dense if default_embedder(True) is not None else {}),
    }


def cpu_seconds(argv: list[str]) -> tuple[float, float]:
    """User + system CPU seconds, and wall seconds, of one run of ``argv``."""
    started = time.perf_counter()
    with subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=CHILD_ENV
    ) as proc:
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        assert proc.stderr is not None
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.read().decode()[-2000:]}")
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - started


def main(argv: list[str] | None = None) -> list[dict[str, object]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as folder:
        todo = commands(memory_of_600_turns(Path(folder)))
        runs: dict[str, list[float]] = {name: [] for name in todo}
        walls: dict[str, list[float]] = {name: [] for name in todo}
        for _ in range(args.repeat):
            for name, command in todo.items():
                cpu, wall = cpu_seconds(command)
                runs[name].append(cpu)
                walls[name].append(wall)
    floor = statistics.median(runs["python -c pass"])
    rows: list[dict[str, object]] = [
        {
            "command": name,
            "cpu_s": round(statistics.median(times), 3),
            "over_python_s": round(statistics.median(times) - floor, 3),
            "x_python": round(statistics.median(times) / floor, 1),
            "wall_s": round(statistics.median(walls[name]), 3),
        }
        for name, times in runs.items()
    ]
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"{'command':<42}{'CPU s':>8}{'over python':>13}{'x python':>10}{'wall s':>9}")
        for r in rows:
            print(f"{r['command']!s:<42}{r['cpu_s']:>8.3f}{r['over_python_s']:>13.3f}"
                  f"{r['x_python']:>10.1f}{r['wall_s']:>9.3f}")  # fmt: skip
    return rows


if __name__ == "__main__":
    main()
