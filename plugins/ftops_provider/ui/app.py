"""The "Fault tolerance" pages: per job, the plan history, the topology with replicated tasks, and
what changed between the last two plans. Every route requires an authenticated Airflow user:
FastAPI apps mounted by a plugin are not protected by Airflow automatically.
"""

from __future__ import annotations

from collections.abc import Iterator
from html import escape

from fastapi import Depends, FastAPI, HTTPException, Query
from fastapi.responses import HTMLResponse

from airflow.api_fastapi.core_api.security import requires_authenticated
from ft_core.store.history import HistoryStore
from ft_core.task_graph import build_task_graph
from ft_core.topology import parse_topology
from ftops_provider.ui.svg import line_chart, topology_graph

app = FastAPI(title="ftops", dependencies=[Depends(requires_authenticated())])

_STYLE = ("body{font-family:system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse}"
          "td,th{border:1px solid #ddd;padding:4px 8px;text-align:left}.added{color:#2da44e}.removed{color:#cf222e}")


def get_store() -> Iterator[HistoryStore]:
    from ftops_provider.hooks.history import HistoryStoreHook

    store = HistoryStoreHook().store()
    try:
        yield store
    finally:
        store.conn.close()


def _page(title: str, body: str) -> HTMLResponse:
    return HTMLResponse(f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
                        f"<style>{_STYLE}</style></head><body><h1>{escape(title)}</h1>{body}</body></html>")


@app.get("/", response_class=HTMLResponse)
def jobs_page(store: HistoryStore = Depends(get_store)) -> HTMLResponse:
    rows = "".join(f"<tr><td><a href='jobs/{escape(j['name'])}'>{escape(j['name'])}</a></td><td>{escape(j['workload'])}</td>"
                   f"<td>{j['replication_budget']}</td></tr>" for j in store.jobs())
    body = (f"<table><tr><th>job</th><th>workload</th><th>replica budget</th></tr>{rows}</table>"
            if rows else "<p>No jobs registered yet.</p>")
    return _page("Fault tolerance: jobs", body)


@app.get("/api/jobs/{job}/plans")
def plans_api(job: str, kind: str = Query("replication", pattern="^(replication|recovery|checkpoint)$"),
              store: HistoryStore = Depends(get_store)) -> list[dict]:
    _known(store, job)
    return [{**p, "created_at": p["created_at"].isoformat()} for p in store.plans(job, kind)]


@app.get("/jobs/{job}", response_class=HTMLResponse)
def job_page(job: str, store: HistoryStore = Depends(get_store)) -> HTMLResponse:
    _known(store, job)
    plans = store.plans(job, "replication")
    chart = line_chart([(f"#{p['plan_id']}", p["objective"]) for p in plans],
                       title="Replication plans: predicted output fidelity over time", y_label="OF")
    body = [f"<section id='history'>{chart}</section>"]
    if plans:
        current = plans[-1]
        body.append(_current_plan(current))
        body.append(_topology(store.latest_topology(job), set(current["payload"].get("tasks", []))))
        if len(plans) > 1:
            body.append(_diff(plans[-2], current))
    else:
        body.append("<p>No replication plan stored for this job yet.</p>")
    return _page(f"Fault tolerance: {job}", "".join(body))


def _known(store: HistoryStore, job: str) -> None:
    if job not in {j["name"] for j in store.jobs()}:
        raise HTTPException(status_code=404, detail=f"job {job!r} is not registered")


def _current_plan(plan: dict) -> str:
    status = "proven optimal" if plan["optimal"] else "heuristic"
    return (f"<h2>Current plan #{plan['plan_id']}</h2><p>{escape(plan['algorithm'])}, OF {plan['objective']:.4f} ({status}), "
            f"{len(plan['payload'].get('tasks', []))} replicas, stored {plan['created_at']:%Y-%m-%d %H:%M} UTC</p>")


def _topology(doc: dict | None, replicated: set[str]) -> str:
    if doc is None:
        return "<p>No topology stored.</p>"
    graph = build_task_graph(parse_topology(doc))
    ops = [(op, [graph.task_ids[i] for i in graph.tasks_of[op]]) for op in graph.operator_order]
    edges = [(graph.task_ids[u], graph.task_ids[v]) for v in range(graph.n) for s in graph.inputs[v] for u in s.upstream]
    return f"<h2>Topology (replicated tasks filled)</h2><section id='topology'>{topology_graph(ops, edges, replicated)}</section>"


def _diff(old: dict, new: dict) -> str:
    before, after = set(old["payload"].get("tasks", [])), set(new["payload"].get("tasks", []))
    added = "".join(f"<li class='added'>+ {escape(t)}</li>" for t in sorted(after - before))
    removed = "".join(f"<li class='removed'>- {escape(t)}</li>" for t in sorted(before - after))
    return (f"<h2>Changes from plan #{old['plan_id']} to #{new['plan_id']}</h2>"
            f"<p>OF {old['objective']:.4f} &rarr; {new['objective']:.4f}</p><ul id='diff'>{added}{removed or ''}</ul>")
