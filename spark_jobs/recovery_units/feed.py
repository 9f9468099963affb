"""The live input of a units deployment whose pipeline has a sample input: its seeded generator appending one
file per source per ``file_s`` (:func:`spark_jobs.pipeline.sample_input.run_generator`).

    python -m spark_jobs.recovery_units.feed --dir DEPLOYMENT

Resumes after the files already in the input folder and logs ``<file index> <wall time>`` per file to
``<dir>/feed.log``. SIGTERM stops it; SIGSTOP pauses it and SIGCONT resumes it (the generator then writes
the files it owes at once).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path

from spark_jobs.recovery_units.deployment import load
from spark_jobs.pipeline.sample_input import run_generator


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="spark_jobs.recovery_units.feed")
    p.add_argument("--dir", type=Path, required=True)
    args = p.parse_args(argv)
    dep = load(args.dir)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    log = (args.dir / "feed.log").open("a", buffering=1)
    run_generator(dep.workload, Path(dep.input), speedup=dep.feed_speedup, stop=stop,
                  log=lambda index: log.write(f"{index} {time.time():.3f}\n"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
