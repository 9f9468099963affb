"""The DAGs live in the package (ftops_provider.dags); thin files in a dags folder let Airflow find them."""

from __future__ import annotations

import json

from ftops_provider.dag_files import dag_ids, install_dag_files
from tests.conftest import ROOT, run_cli

DAG_IDS = ["ftops_chaos_drill", "ftops_checkpoint_tuning", "ftops_fleet_recovery", "ftops_fleet_watch",
           "ftops_incremental_recovery", "ftops_profile_and_plan", "ftops_safety_net"]


def test_the_repository_dags_folder_holds_exactly_the_installed_thin_files(tmp_path):
    assert dag_ids() == DAG_IDS
    install_dag_files(tmp_path)
    written = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert {p.name: p.read_text() for p in (ROOT / "dags").glob("*.py")} == written
    for text in written.values():  # Airflow's safe-mode scan skips files without both words
        assert "airflow" in text.lower() and "dag" in text.lower()


def test_install_writes_once_refuses_to_overwrite_and_forces(tmp_path):
    first = run_cli("dags", "install", "--dags-folder", tmp_path, "--json")
    assert first.code == 0, first.err
    assert [(f["dag_id"], f["status"]) for f in first.json()["files"]] == [(d, "written") for d in DAG_IDS]
    again = run_cli("dags", "install", "--dags-folder", tmp_path, "--json")
    assert {f["status"] for f in again.json()["files"]} == {"unchanged"}

    mine = tmp_path / "ftops_profile_and_plan_dag.py"
    mine.write_text("# a user's own file\n")
    (tmp_path / "ftops_chaos_drill_dag.py").unlink()
    refused = run_cli("dags", "install", "--dags-folder", tmp_path)
    assert refused.code == 2
    assert refused.err.strip() == f"ftops: error: --dags-folder: {mine} exists with other content; --force replaces it"
    assert mine.read_text() == "# a user's own file\n" and not (tmp_path / "ftops_chaos_drill_dag.py").exists()

    forced = run_cli("dags", "install", "--dags-folder", tmp_path, "--force", "--json")
    statuses = {f["dag_id"]: f["status"] for f in forced.json()["files"]}
    assert statuses["ftops_profile_and_plan"] == "replaced" and statuses["ftops_chaos_drill"] == "written"
    assert mine.read_text() == (ROOT / "dags" / mine.name).read_text()


def test_install_names_a_missing_folder(tmp_path):
    res = run_cli("dags", "install", "--dags-folder", tmp_path / "nope", "--json")
    assert res.code == 2 and json.loads(res.out)["field"] == "--dags-folder"
    assert not (tmp_path / "nope").exists()


def test_a_plugins_folder_with_ftops_provider_does_not_import_the_dag_modules():
    """Airflow imports every .py file of its plugins folder (tests/airflow/conftest.py sets it to plugins/)."""
    from airflow._shared.module_loading import find_path_from_directory  # what the plugins manager walks with

    found = list(find_path_from_directory(ROOT / "plugins", ".airflowignore"))
    assert any(p.endswith("ftops_provider/plugin.py") for p in found)
    assert not [p for p in found if "/ftops_provider/dags/" in p]
