"""``ftops bench replication --quick`` writes a complete report (a smoke test, not a timed test)."""

from __future__ import annotations


def test_quick_benchmark_writes_every_section(cli, tmp_path):
    out = tmp_path / "replication.md"
    res = cli("bench", "replication", "--quick", "--out", out, timeout=600)
    assert res.code == 0, res.err
    text = out.read_text()
    for heading in ("## 1. Fig. 13 style", "## 2. Fig. 14 style", "## 3. Optimality", "## 4. Scale",
                    "## 5. Spark-like shapes", "### 10,000-task Spark-like shapes"):
        assert heading in text
    for plot in ("replication-quality.svg", "replication-proofs.svg"):  # beside the table, linked from it
        assert (tmp_path / plot).read_text().lstrip().startswith("<?xml") and f"]({plot})" in text
    assert "Produced by `ftops bench replication --quick" in text
    assert "| q2-incidents | 100% | 17 | 1.0000 | 1.0000 | 1.0000 | yes | yes |" in text
