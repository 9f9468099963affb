"""Sample topologies shipped with ftops (paper 000's Q1, Q2, Fig. 1, Fig. 2 and Fig. 6).

- ``fig2-join`` / ``fig2-independent``: the Fig. 2 example (t31 reads O1 = {1, 2} and O2 = {3, 2}).
- ``fig1``: a reconstruction of Fig. 1 consistent with the counts the text gives (16 MC-trees with
  O3 independent, 8 with O3 a join); the figure itself is not in the text.
- ``fig6-recovery``: 16 sources, then operators of 8, 4, 2, 1 tasks, each task reading two upstream tasks.
- ``q1-topk``: top-k by hierarchical aggregation (8 server groups with Zipf request shares, 4 mergers, 1 top-k).
- ``q2-incidents``: segment speed (8) and distinct incidents (4) joined (4) and aggregated (1).
Parallelism of Q1/Q2 is scaled to this project's workloads; the paper's figure gives no numbers.
"""

from __future__ import annotations

from pathlib import Path

from ft_core.errors import InputError
from ft_core.topology.task_graph import TaskGraph, build_task_graph
from ft_core.topology.document import load_topology

SAMPLES_DIR = Path(__file__).parent


def sample_names() -> list[str]:
    return sorted(p.stem for p in SAMPLES_DIR.glob("*.json") if not p.stem.startswith(("recovery-", "profiles-")))


def sample_path(name: str) -> Path:
    path = SAMPLES_DIR / f"{name}.json"
    if not path.exists():
        raise InputError(f"unknown sample {name!r}; samples: {', '.join(sample_names())}")
    return path


def load_sample(name: str) -> TaskGraph:
    """The task graph of a shipped sample topology."""
    return build_task_graph(load_topology(sample_path(name)))
