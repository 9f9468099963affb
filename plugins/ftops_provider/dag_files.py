"""The thin DAG files that let Airflow find the DAGs ftops ships in :mod:`ftops_provider.dags`.

Airflow only parses files in its dags folder (or a DAG bundle), while the DAG definitions live in the
installed package, like a provider's. A thin file per DAG bridges the two: it imports the package's
module and exposes its ``dag`` at module level, where Airflow's DagBag looks; Airflow records the thin
file as the DAG's file, so its tasks re-parse it wherever they run. Its text mentions ``airflow`` and
``DAG``, so Airflow's safe-mode scan (``[core] dag_discovery_safe_mode``) does not skip it.

Why thin files in the user's own dags folder rather than pointing ``AIRFLOW__CORE__DAGS_FOLDER`` at the
package: Airflow has one dags folder, which users keep for their own DAGs; the thin files never change
between ftops versions (``pip install -U ftops`` upgrades the DAGs they import); and no configuration
names a path inside site-packages. The repository's ``dags/`` holds exactly these files (a test checks it).

    ftops dags install --dags-folder $AIRFLOW_HOME/dags
"""

from __future__ import annotations

import pkgutil
from dataclasses import dataclass
from pathlib import Path

from ft_core.errors import InputError

DAGS_PACKAGE = "ftops_provider.dags"
# Not the module's own name: the definitions once lived in the repository's dags/ under those names, and
# git follows edits made there into the package only while no file of the same path exists again.
SUFFIX = "_dag.py"

_TEMPLATE = '''"""Airflow DAG {dag_id}: defined in the installed ftops package ({module}).

Written by `ftops dags install`; the DAG's code is upgraded with the package, not here.
"""

from {module} import dag  # noqa: F401 - Airflow finds the DAG object at module level
'''


@dataclass(frozen=True)
class DagFile:
    dag_id: str
    path: Path
    status: str  # "written", "unchanged" or "replaced"


def dag_ids() -> list[str]:
    """The DAGs the package ships: one module per DAG, named after its dag id."""
    import importlib

    package = importlib.import_module(DAGS_PACKAGE)
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.ispkg)


def thin_file_text(dag_id: str) -> str:
    return _TEMPLATE.format(dag_id=dag_id, module=f"{DAGS_PACKAGE}.{dag_id}")


def install_dag_files(dags_folder: Path, force: bool = False) -> list[DagFile]:
    """Write one thin file per DAG into ``dags_folder``. A file that exists with other content is
    refused (nothing is written) unless ``force``; identical files are left alone."""
    folder = Path(dags_folder)
    if not folder.is_dir():
        raise InputError(f"--dags-folder: {folder} is not a folder (create it, or give Airflow's dags folder)")
    planned = []
    for dag_id in dag_ids():
        path, text = folder / f"{dag_id}{SUFFIX}", thin_file_text(dag_id)
        current = path.read_text(errors="replace") if path.is_file() else None
        if path.exists() and current is None:
            raise InputError(f"--dags-folder: {path} exists and is not a file")
        planned.append((dag_id, path, text, current))
    differing = [path for _, path, text, current in planned if current not in (None, text)]
    if differing and not force:
        raise InputError(f"--dags-folder: {differing[0]} exists with other content; --force replaces it")
    done = []
    for dag_id, path, text, current in planned:
        if current != text:
            path.write_text(text)
        status = "written" if current is None else "unchanged" if current == text else "replaced"
        done.append(DagFile(dag_id, path, status))
    return done
