"""``FTOPS_HOME``: the folder where ftops keeps the state it creates on this machine.

What lives there: the embedded PostgreSQL (``postgres/``), the local Spark clusters (``spark/``),
recovery-unit deployments (``units/``), the profiling copies of ``ftops_checkpoint_tuning``
(``profiling/``) and the demo stack's jobs and Airflow (``jobs/``, ``airflow-local/``).

Where it is (the first that applies):

1. ``$FTOPS_HOME``, an absolute path (docker-compose.yml points it at the volume Airflow and Spark share);
2. ``<checkout>/.state`` when ftops runs from a source checkout (the folder above ``ft_core`` holds
   ``pyproject.toml``): what developers, ``make demo`` and the tests have always used;
3. ``~/.ftops`` otherwise: an installed wheel has no checkout to write into.

    >>> state_path("spark", "cluster.json") == ftops_home() / "spark" / "cluster.json"
    True
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ft_core.errors import InputError

ENV_VAR = "FTOPS_HOME"


def ftops_home() -> Path:
    """The state folder (not created here: whoever writes into it creates what it needs)."""
    configured = os.environ.get(ENV_VAR, "").strip()
    if configured:
        path = Path(configured).expanduser()
        # A relative path would mean a different folder for every working directory (a DAG file is
        # parsed by one process and its tasks run in others).
        if not path.is_absolute():
            raise InputError(f"{ENV_VAR}: must be an absolute path, got {configured!r}")
        return path
    checkout = source_checkout()
    if checkout is not None:
        return checkout / ".state"
    return Path.home() / ".ftops"


def state_path(*parts: str) -> Path:
    """A folder or file under :func:`ftops_home`."""
    return ftops_home().joinpath(*parts)


def source_checkout() -> Path | None:
    """The repository ftops is imported from, or None for an installed package (site-packages)."""
    root = Path(__file__).resolve().parents[1]
    return root if (root / "pyproject.toml").is_file() else None


HOME_PREFIX = f"${ENV_VAR}/"


def path_flag(text: str) -> Path:
    """Type of a path flag whose default lives under FTOPS_HOME, e.g. ``default="$FTOPS_HOME/spark"``.

    argparse converts a string default with the flag's type when a command is parsed, not when the
    parser is built, so the home is read then (a bad FTOPS_HOME fails only the commands that use it),
    and ``--help`` shows the default as written.

    >>> path_flag("data/in")
    PosixPath('data/in')
    >>> path_flag("$FTOPS_HOME/spark") == ftops_home() / "spark"
    True
    """
    if not text.startswith(HOME_PREFIX):
        return Path(text)
    try:
        return state_path(*text.removeprefix(HOME_PREFIX).split("/"))
    except InputError as exc:  # argparse would hide it behind "invalid path_flag value"
        raise argparse.ArgumentTypeError(str(exc)) from None
