"""``ftops dags install --dags-folder DIR [--force]``: the thin files through which Airflow finds ftops's DAGs
(:mod:`ftops_provider.dag_files`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ft_core.cli.output import print_json, print_table


def register(sub, groups) -> None:
    dags = sub.add_parser("dags", help="the Airflow DAGs ftops ships: put them where Airflow looks")
    dsub = dags.add_subparsers(dest="dags_command", required=True, parser_class=type(dags))
    text = "write one thin file per ftops DAG into Airflow's dags folder (the DAGs themselves stay in the package)"
    install = dsub.add_parser("install", help=text, description=text)
    install.add_argument("--dags-folder", type=Path, required=True, help="Airflow's dags folder ([core] dags_folder)")
    install.add_argument("--force", action="store_true", help="replace files of the same name with other content")
    install.add_argument("--json", action="store_true", help="print the files as JSON")
    install.set_defaults(func=_install)


def _install(args: argparse.Namespace) -> int:
    from ftops_provider.dag_files import install_dag_files

    files = install_dag_files(args.dags_folder, force=args.force)
    if args.json:
        print_json({"files": [{"dag_id": f.dag_id, "path": str(f.path), "status": f.status} for f in files]})
    else:
        print_table(["dag", "file", "status"], [[f.dag_id, str(f.path), f.status] for f in files])
    return 0
