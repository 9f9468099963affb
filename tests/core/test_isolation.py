"""ft_core must import and run with Airflow and PySpark unavailable."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import ROOT

BLOCKER = textwrap.dedent("""
    import importlib.abc, sys
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split('.')[0] in {'airflow', 'pyspark', 'py4j'}:
                raise ImportError('blocked for the test: ' + name)
    sys.meta_path.insert(0, Block())
""")


def test_ft_core_runs_without_airflow_and_spark():
    code = BLOCKER + textwrap.dedent("""
        import pkgutil, importlib, ft_core
        for mod in pkgutil.walk_packages(ft_core.__path__, 'ft_core.'):
            importlib.import_module(mod.name)
        from ft_core.cli.main import main
        assert main(['plan', 'replication', 'ft_core/samples/q1-topk.json', '-R', '4', '--algorithm', 'exact', '--json']) == 0
        assert not any(m.split('.')[0] in {'airflow', 'pyspark'} for m in sys.modules)
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert '"optimal": true' in proc.stdout
