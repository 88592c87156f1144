"""What starting heard costs: CPU seconds per command beside ``python -c pass``, same run.

Every CLI call pays its start-up before any work: the interpreter, then what the package and
the command import. CPU time (user + system, from the child's rusage) is used rather than wall
time, which on a shared 2-core machine mostly measures the neighbours. Each command runs
``--repeat`` times, alternating with the others; the median is reported.

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

from heard.samples import sample_path


def commands() -> dict[str, list[str]]:
    heard = shutil.which("heard")
    cli = [heard] if heard else [sys.executable, "-m", "heard"]
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "python -c 'import heard'": [sys.executable, "-c", "import heard"],
        "heard --help": [*cli, "--help"],
        "heard transcribe --help": [*cli, "transcribe", "--help"],
        "heard memory recall --help": [*cli, "memory", "recall", "--help"],
        "heard replay jfk_partials.jsonl": [*cli, "replay", str(sample_path("jfk_partials.jsonl"))],
    }


def cpu_seconds(argv: list[str]) -> float:
    """User + system CPU seconds of one run of ``argv``."""
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        assert proc.stderr is not None
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.read().decode()[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> list[dict[str, object]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    runs: dict[str, list[float]] = {name: [] for name in commands()}
    for _ in range(args.repeat):
        for name, command in commands().items():
            runs[name].append(cpu_seconds(command))
    floor = statistics.median(runs["python -c pass"])
    rows: list[dict[str, object]] = [
        {
            "command": name,
            "cpu_s": round(statistics.median(times), 3),
            "over_python_s": round(statistics.median(times) - floor, 3),
            "x_python": round(statistics.median(times) / floor, 1),
        }
        for name, times in runs.items()
    ]
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"{'command':<36}{'CPU s':>8}{'over python':>13}{'x python':>10}")
        for r in rows:
            print(f"{r['command']!s:<36}{r['cpu_s']:>8.3f}{r['over_python_s']:>13.3f}"
                  f"{r['x_python']:>10.1f}")  # fmt: skip
    return rows


if __name__ == "__main__":
    main()
