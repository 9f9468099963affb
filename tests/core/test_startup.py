"""What ``ftops`` loads when it starts, and the packages' lazy re-exports (lazy-loader).

The parser of every command is built at each start (the CLI, and every ``ftops`` the DAGs and tests run), so
the libraries only some commands need (numpy, scipy and HiGHS, networkx, httpx, rich, matplotlib) load when
such a command runs. Checked by what is imported, not by time.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT

HEAVY = ("numpy", "scipy", "highspy", "networkx", "httpx", "rich", "matplotlib", "pyspark", "airflow")
# Every package whose __init__ re-exports through lazy_loader (found, so a new one is checked too).
LAZY_PACKAGES = sorted(".".join(init.parent.relative_to(ROOT).parts) for top in ("ft_core", "spark_jobs")
                       for init in (ROOT / top).rglob("__init__.py") if "lazy_loader.attach(" in init.read_text())


def _loaded_after(code: str) -> list[str]:
    probe = textwrap.dedent(code) + textwrap.dedent(f"""
        import json, sys
        print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))))
    """)
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_building_every_commands_parser_loads_none_of_the_heavy_libraries():
    assert _loaded_after("""
        from ft_core.cli.main import build_parser
        build_parser().parse_args(["plan", "recovery", "p.json", "-R", "1"])
    """) == []


def test_a_command_loads_what_it_needs_when_it_runs():
    loaded = _loaded_after("""
        import contextlib, io
        from ft_core.cli.main import main
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["plan", "replication", "ft_core/samples/q1-topk.json", "-R", "4", "--algorithm", "exact"]) == 0
    """)
    assert {"highspy", "rich"} <= set(loaded), loaded  # the exact planner's solver and the table it prints


def test_the_lazy_packages_are_found():
    assert {"ft_core.replication", "spark_jobs.pipeline"} <= set(LAZY_PACKAGES), LAZY_PACKAGES


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_public_name_of_a_package_resolves(package):
    module = importlib.import_module(package)
    assert module.__all__, package
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"
    assert set(module.__all__) <= set(dir(module))
