"""A class-data-sharing (AppCDS) archive of Spark's classes for the JVMs the test suite starts.

Every Spark JVM (master, worker, driver, executor) loads and verifies thousands of classes from the jars
before it does any work; the suite starts hundreds of them on a 2-core machine. A dynamic CDS archive
(JDK 13+, ``-XX:ArchiveClassesAtExit``) written once by a driver that touched what the tests' JVMs touch
(tests/spark_class_archive_job.py) lets each of them map those classes instead: on tests/spark/test_drill.py
the JVMs' CPU fell by a fifth and the module's wall time by a quarter. It changes how fast classes load,
not what runs.

The archive belongs to one JDK, one set of Spark jars, one set of JVM options and one job, so its name
carries a hash of the four. It is built on first use (about a minute) under ``.state/jvm-class-archive/``
with a lock, so xdist workers and concurrent runs build it once. A JVM whose class path does not match
(Spark's launcher, ``java -version``) ignores it, with the JDK's warning silenced; if it cannot be built
the tests run without it and say so.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

from spark_jobs.cluster.standalone import spark_env, spark_home

JOB = Path(__file__).with_name("spark_class_archive_job.py")
# Silences the JDK's "Unable to use shared archive" for JVMs with another class path; the warning goes to
# stdout, and Spark's launcher prints the command it builds on stdout.
QUIET = "-Xlog:cds=off,cds+dynamic=off"


def archive_key(java: Path, jars: Path, base: str) -> str:
    """A hash of the JDK (its libjvm), the Spark jars (names and sizes), the JVM options and the archiving job."""
    digest = hashlib.sha256()
    libjvm = next(java.resolve().parents[1].glob("lib/server/libjvm.so"), None)
    digest.update(f"{java.resolve()}:{libjvm.stat().st_size if libjvm else 0}".encode())
    for jar in sorted(jars.glob("*.jar")):
        digest.update(f"{jar.name}:{jar.stat().st_size}".encode())
    digest.update(base.encode())
    digest.update(JOB.read_bytes())
    return digest.hexdigest()[:16]


def java_options(state_dir: Path, base: str) -> list[str]:
    """The JVM options that use the archive, building it first (its JVM runs with ``base``, the options the
    archive will be used with) if needed; none when it cannot be built."""
    java = shutil.which("java")
    if java is None:
        return []
    home = spark_home()
    folder = state_dir / "jvm-class-archive"
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / f"spark-{archive_key(Path(java), home / 'jars', base)}.jsa"
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one process builds; the others wait, then use it
        if not archive.exists() and not _build(archive, base):
            return []
    return [f"-XX:SharedArchiveFile={archive}", QUIET]


def _build(archive: Path, base: str) -> bool:
    partial = archive.with_suffix(".partial")
    for stale in archive.parent.glob("spark-*"):  # another JDK's or Spark's archive and log, or a partial one
        stale.unlink()
    log = archive.with_suffix(".log")
    sys.stderr.write(f"Building the JVM class archive for the tests' Spark JVMs (once per JDK and Spark; "
                     f"about a minute): {archive}\n")
    started = time.monotonic()
    env = spark_env({"PYSPARK_PYTHON": sys.executable, "JDK_JAVA_OPTIONS": base})
    command = [f"{env['SPARK_HOME']}/bin/spark-submit", "--driver-java-options",
               f"-XX:ArchiveClassesAtExit={partial} {QUIET}", str(JOB)]
    with open(log, "w") as out:
        try:
            done = subprocess.run(command, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=600, check=False)
        except subprocess.TimeoutExpired:
            done = None
    if done is None or done.returncode != 0 or not partial.exists():
        sys.stderr.write(f"Could not build the JVM class archive (see {log}); the tests' JVMs start without it\n")
        partial.unlink(missing_ok=True)
        return False
    partial.rename(archive)
    sys.stderr.write(f"Built the JVM class archive in {time.monotonic() - started:.0f} s\n")
    return True
