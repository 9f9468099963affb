"""The launcher an attached application runs under: ``spark-submit [options] launcher.py --job NAME --control DIR
-- APP [APP_ARGS]`` (what ``ftops job submit`` builds, :mod:`spark_jobs.attach.deployment`).

It installs ftops's hooks (:mod:`spark_jobs.attach.hooks`: every SparkSession the application builds is attached
once it exists) and then runs the user's application unchanged, as ``python APP APP_ARGS`` would: ``runpy`` with
``__main__`` as its name, ``sys.argv`` as given and its folder first on ``sys.path``; the way
``opentelemetry-instrument`` and ``ddtrace-run`` run code they did not write. The application's exit status is
the launcher's.
"""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path

# Run as a script, this file's folder is first on sys.path, where its sibling modules could shadow the standard
# library's for the application (and for PySpark); the application gets its own folder there instead.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ftops-attach", description=__doc__.split("\n\n")[0])
    parser.add_argument("--job", required=True, help="the registered job's name")
    parser.add_argument("--control", type=Path, required=True, help="ftops's folder for the job's records and requests")
    parser.add_argument("app", help="the application (.py), as given to spark-submit")
    parser.add_argument("app_args", nargs=argparse.REMAINDER, help="its arguments")
    args = parser.parse_args(argv)
    if args.app_args[:1] == ["--"]:
        args.app_args = args.app_args[1:]
    return args


def main(argv: list[str] | None = None) -> None:
    from spark_jobs.attach.hooks import install

    raw = list(sys.argv[1:] if argv is None else argv)
    if "--" in raw:  # everything after -- is the application's, flags included
        i = raw.index("--")
        raw = raw[:i] + raw[i + 1:i + 2] + ["--"] + raw[i + 2:]
    args = parse(raw)
    install(args.job, args.control)
    app = Path(args.app).resolve()
    sys.argv = [str(app), *args.app_args]
    sys.path.insert(0, str(app.parent))
    runpy.run_path(str(app), run_name="__main__")


if __name__ == "__main__":
    main()
