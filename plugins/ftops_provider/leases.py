"""Who holds a job's lease for a DAG run (``ft_core.store.leases``): the run's DAG and id, which is what a
refused experiment is told."""

from __future__ import annotations


def run_holder(dag_id: str, run_id: str) -> str:
    return f"dag run {dag_id}/{run_id}"
