"""What README and docs/your-own-job.md tell a new user to type and to write (issue 37, "the first hour")."""

from __future__ import annotations

import dataclasses
import re

from spark_jobs.pipeline.definition import SampleInput
from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "examples").glob("*.py"))]


def _commands(text: str, command: str) -> list[str]:
    """Every ``command`` line of ``text``, its backslash continuations joined (``\\\\`` in a Python docstring)."""
    joined = re.sub(r"\\+\n\s*", " ", text)
    return [line[line.index(command):] for line in joined.splitlines() if command in line]


def test_every_job_register_on_a_master_names_its_web_ui():
    """Item 8: without --master-ui a job's UI is http://HOST:8080 of --master, Airflow's port on the local stack
    (Spark's master UI is on 8090 there): an example that leaves it out registers a job whose waits ask Airflow."""
    missing = []
    for page in PAGES:
        for cmd in _commands(page.read_text(), "ftops job register"):
            flags = set(re.findall(r"(?<!\S)--[\w-]+", cmd))
            for master, ui in (("--master", "--master-ui"), ("--standby-master", "--standby-ui")):
                if master in flags and ui not in flags:
                    missing.append(f"{page.relative_to(ROOT)}: {cmd[:90]}... gives {master} without {ui}")
    assert not missing, missing
    assert any("--master-ui" in c for c in _commands((ROOT / "README.md").read_text(), "ftops job register"))


def test_sample_input_is_documented_field_by_field():
    """Item 6: SampleInput (records, file_s, start_ms, tables, expected_rates) was documented only by the example."""
    page = (ROOT / "docs" / "your-own-job.md").read_text()
    heading = re.search(r"^#+ .*`SampleInput`.*$", page, re.MULTILINE)
    assert heading, "docs/your-own-job.md has no section on SampleInput"
    section = page[heading.end():]
    section = section[:re.search(r"^#+ ", section, re.MULTILINE).start()]
    fields = [f.name for f in dataclasses.fields(SampleInput)]
    assert set(fields) == {"records", "file_s", "start_ms", "expected_rates", "tables"}
    rows = {m.group(1) for m in re.finditer(r"^\| `(\w+)", section, re.MULTILINE)}
    assert rows == set(fields), f"table rows {rows} != SampleInput's fields {fields}"
    assert "`records(p, source, index)`" in section and "`tables(p)`" in section and "`expected_rates(p)`" in section
