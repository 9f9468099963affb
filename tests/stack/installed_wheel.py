"""ftops as users install it: a wheel built from this working tree, installed into a fresh virtual environment
outside the checkout with the dependencies pinned by requirements.lock, run from a folder outside the
checkout with no PYTHONPATH (so nothing can be imported from the repository by accident).

Built once per test session (a few seconds: uv hard-links the locked packages from its cache).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT

UV = ROOT / ".tools" / "bin" / "uv"


@dataclass
class InstalledWheel:
    wheel: Path
    venv: Path
    work: Path  # the working directory of every command (outside the checkout)
    home: Path  # HOME of every command, so ~/.ftops is a fresh folder

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def env(self, **extra: str) -> dict[str, str]:
        inherited = {k: v for k, v in os.environ.items()
                     if k not in ("PYTHONPATH", "VIRTUAL_ENV", "FTOPS_HOME", "FTOPS_SQL_DIR", "FTOPS_DATABASE_URL")
                     and not k.startswith(("AIRFLOW", "PYTEST"))}
        return {**inherited, "HOME": str(self.home), "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}",
                "AIRFLOW_HOME": str(self.home / "airflow"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False", **extra}

    def run(self, *args: str | Path, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
        """A command of the installed environment (``ftops``, ``python``, ``airflow``) from ``work``."""
        exe = self.bin / str(args[0])
        return subprocess.run([str(exe), *map(str, args[1:])], capture_output=True, text=True, timeout=timeout,
                              cwd=self.work, env=self.env(**env))

    def site_packages(self) -> Path:
        return next(self.venv.glob("lib/python3*/site-packages"))

    def names(self) -> set[str]:
        with zipfile.ZipFile(self.wheel) as whl:
            return set(whl.namelist())


def _uv(*args: str | Path, cwd: Path) -> None:
    proc = subprocess.run([str(UV), *map(str, args)], capture_output=True, text=True, timeout=600, cwd=cwd)
    assert proc.returncode == 0, f"uv {' '.join(map(str, args[:3]))} failed:\n{proc.stderr[-3000:]}"


def _uv_offline_first(*args: str | Path, cwd: Path) -> None:
    """From uv's cache when it has everything (fast, no network), else from the registry."""
    proc = subprocess.run([str(UV), *map(str, args), "--offline"], capture_output=True, text=True, timeout=600, cwd=cwd)
    if proc.returncode != 0:
        _uv(*args, cwd=cwd)


def copy_working_tree(dest: Path) -> Path:
    """The files git tracks or would track (committed or not), as a Docker build context would see them:
    a build from the checkout itself could pick up a stale ``build/`` folder of an earlier build."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def build_and_install(tmp: Path) -> InstalledWheel:
    assert UV.exists(), "uv is missing: run ./scripts/bootstrap.sh"
    source = copy_working_tree(tmp / "source")
    _uv("build", "--wheel", "--quiet", "-o", tmp / "dist", source, cwd=tmp)
    wheel = next((tmp / "dist").glob("ftops-*.whl"))
    venv = tmp / "venv"
    _uv("venv", "--quiet", "-p", sys.executable, venv, cwd=tmp)
    python = venv / "bin" / "python"
    # sync, not install: the lock leaves out pyspark-client on purpose (overrides.txt), as the Dockerfile does
    _uv_offline_first("pip", "sync", "--quiet", "-p", python, ROOT / "requirements.lock", cwd=tmp)
    _uv("pip", "install", "--quiet", "--no-deps", "-p", python, wheel, cwd=tmp)
    for folder in ("work", "home"):
        (tmp / folder).mkdir()
    return InstalledWheel(wheel=wheel, venv=venv, work=tmp / "work", home=tmp / "home")
