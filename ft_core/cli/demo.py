"""``ftops demo``: a quick tour of the replication planners, with no Spark or Airflow.

Plans active replication for the shipped sample topologies (paper 000's Q1, Q2 and the Fig. 6
topology) with every planner at replication ratios of 25%, 50% and 75%, and prints what each plan
keeps of the output during a worst-case correlated failure.
"""

from __future__ import annotations

import argparse

from ft_core.cli.output import print_json, print_table
from ft_core.cli.progress import Progress
from ft_core.replication.mctree import count_mc_trees
from ft_core.replication.planners import ALGORITHMS, plan_replication
from ft_core.samples import load_sample

DEMO_SAMPLES = ("q1-topk", "q2-incidents", "fig6-recovery")
RATIOS = (0.25, 0.5, 0.75)


def register(sub, groups) -> None:
    demo = sub.add_parser("demo", help="a quick tour of the planners on the sample topologies (no Spark, no Airflow)")
    demo.add_argument("--json", action="store_true", help="print the output fidelity per topology, ratio and planner as JSON")
    demo.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    rows, docs = [], []
    jobs = [(name, ratio) for name in DEMO_SAMPLES for ratio in RATIOS]
    progress = Progress("demo", total=len(jobs))
    for name, ratio in jobs:
        progress.step(f"planning {name} at {ratio:.0%}")
        graph = load_sample(name)
        budget = round(ratio * graph.n)
        plans = {alg: plan_replication(graph, budget, alg, time_limit=30) for alg in ALGORITHMS}
        rows.append([f"{name} ({graph.n} tasks, {count_mc_trees(graph)} MC-trees)", f"{ratio:.0%} (R={budget})",
                     *(plans[a].output_fidelity for a in ALGORITHMS), "yes" if plans["exact"].optimal else "no"])
        docs.append({"topology": name, "ratio": ratio, "budget": budget, "exact_optimal": plans["exact"].optimal,
                     "output_fidelity": {a: plans[a].output_fidelity for a in ALGORITHMS}})
    progress.close()
    if args.json:
        print_json(docs)
        return 0
    print("Output fidelity of tentative outputs under a worst-case correlated failure (paper 000, Eq. 4):\n")
    print_table(["topology", "replicas", *ALGORITHMS, "exact proven"], rows)
    print("\nNext: `ftops plan replication TOPOLOGY --budget R --algorithm structure-aware` for your own topology;"
          " `ftops --help` lists every command.")
    return 0
