"""`ftops workload generate --realtime` says what it writes and how it ends before it writes silently (a new user
could not tell it ran without counting files), and its count at the end."""

from __future__ import annotations


def test_a_realtime_generator_says_what_it_writes_and_until_when(cli, tmp_path):
    res = cli("workload", "generate", "topk", "--input", tmp_path / "in", "--realtime", "--duration-s", "2",
              "--speedup", "4")
    assert res.code == 0, res.err
    first, *_, last = res.out.strip().splitlines()
    assert first == f"writing requests to {tmp_path / 'in'} in real time (x4) for 2 s"
    assert last.endswith(f"files per source in {tmp_path / 'in'}") and int(last.split()[0]) >= 1
