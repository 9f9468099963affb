"""Structure-aware (SA) replication planner: paper 000, Section IV-C, Algorithms 3-5.

Problem: choose at most R tasks to replicate so that OF, with every other task failed (the worst
correlated failure), is maximal. OF only counts *complete* MC-trees (a set-union knapsack, NP-hard),
so SA grows the plan by whole MC-tree extensions with the best *profit density*
``(OF(P u CG) - OF(P)) / |CG \\ P|``.

Algorithm:

1. Decompose the topology into full and structured sub-topologies (:mod:`ft_core.replication.sub_topology`),
   and those into units and segments (:mod:`ft_core.replication.units`).
2. Candidates (Alg. 3 lines 8-18, Alg. 4 lines 13-17): for every segment of a structured unit not
   yet replicated, and for the not-yet-replicated task with the largest ``delta_ij`` of every operator
   of a full sub-topology, the candidate ``CG`` is the segment plus the connected segments that turn
   it into a complete MC-tree: downstream to a sink and upstream for every requirement, one segment
   per visited unit (the paper's BFS over neighbouring units with ``max_of``). A requirement whose
   upstream is already alive, or a root with a replicated downstream task, needs nothing more.
3. Repeatedly add the candidate with the largest profit density that fits the remaining budget
   (Alg. 3 line 19, Alg. 5 lines 11-17: candidates of all sub-topologies compete, so the resources go
   to the sub-topology whose extension has the best OF gain per task), until no candidate with a
   positive gain fits.

Choices where the paper is ambiguous or where a literal reading loses OF (the true OF computed
incrementally by :class:`~ft_core.replication.incremental_fidelity.IncrementalFidelity` is the arbiter):

- Alg. 5 line 4 returns an empty plan when R < number of operators. That holds only if every MC-tree
  uses every operator; with an independent operator reading two inputs (Fig. 2) a tree of fewer
  tasks exists. We return an empty plan only when no complete MC-tree fits in R.
- Alg. 5 seeds each sub-topology with one tree of its own (``usage += N_i``) before comparing.
  We do not seed: a candidate is always a *complete* MC-tree of the whole topology (it crosses
  sub-topology boundaries), so a sub-topology's first tree is bought exactly when it pays off, and
  an independent operator's second input branch is bought only when its OF per task wins.
- Alg. 4 seeds one task of every operator. We complete only the operators an MC-tree needs; further
  operators and further tasks (next largest ``delta_ij``) come in as single-task extensions ranked by
  their true OF gain (``delta_ij`` itself is the task's static OF sensitivity, exact for independent
  operators: the OF gain of replicating it with the rest of its operator failed and all else alive).
- Alg. 3 line 9 tests ``OF_P = OF_{P u CG}`` before the BFS; we always complete, which yields the
  same candidate when the segment alone already completes a tree (nothing is added) and a
  complete one otherwise. Its line 19 truncates the BFS at the budget (an incomplete chain gains
  nothing); we drop candidates that do not fit instead.
- ``max_of`` picks, in each visited unit, the connected segment with the largest static weight; we
  divide that weight by ``1 +`` its not-yet-replicated tasks, so already replicated segments are
  reused (an upstream that is already alive costs nothing at all).
- Profit densities are the true OF gains of Eq. 1-4 on the whole topology, not a sub-topology's OF
  "as an independent topology".
- After the paper's loop, leftover resources keep buying the next-best complete extensions by
  profit density; the loop only stops when no positive-gain candidate fits.
- The result is the better of this plan and greedy's (Alg. 2): when most tasks are replicated
  (85-95% on Q1 and Q2), the few tasks left out matter one by one and whole-tree increments
  waste replicas that greedy's single tasks use (issue 15). Greedy costs O(T * C) more.

Speed: a lazy greedy. Candidates live in a max-heap; a popped candidate evaluated before the last
commit is re-evaluated and pushed back (gains only move locally). After a commit, the candidates that
contained a newly replicated task are re-evaluated at once (their cost fell). When there are at most
``EXHAUSTIVE_LIMIT`` candidates, all are re-evaluated after every commit (the exact greedy).

Complexity: O(T + S) to build, then O(K (L + C)) per commit for K re-evaluated candidates of L
tasks with a cone C; the paper states O(R N M^2 E). With a ``deadline`` the loop stops when it
passes (the plan so far is valid, just smaller) and greedy is skipped.

Example (Fig. 6: 16 -> 8 -> 4 -> 2 -> 1 merges; 5 replicas buy one complete root-to-leaf chain)::

    >>> from ft_core.samples import load_sample
    >>> plan = structure_aware_plan(load_sample("fig6-recovery"), 5)
    >>> plan.tasks, plan.output_fidelity
    (['S[0]', 'A[0]', 'B[0]', 'C[0]', 'D[0]'], 0.0625)
"""

from __future__ import annotations

import heapq
import time

from ft_core.deadline import Deadline
from ft_core.replication.fidelity import replicated_fidelity
from ft_core.replication.greedy import greedy_tasks
from ft_core.replication.incremental_fidelity import IncrementalFidelity
from ft_core.replication.plan import ReplicationPlan, make_plan
from ft_core.topology.task_graph import TaskGraph
from ft_core.replication.units import UnitDecomposition, build_units

EXHAUSTIVE_LIMIT = 600
_UPSTREAM_OPTIONS = 6   # best-ranked upstream tasks looked at per requirement
_SEGMENT_OPTIONS = 6    # best-weight segments looked at per task


def structure_aware_plan(graph: TaskGraph, budget: int, *, deadline: Deadline | None = None) -> ReplicationPlan:
    """The SA plan with at most ``budget`` replicated tasks (the better of Alg. 3-5's and greedy's)."""
    start = time.perf_counter()
    deadline = deadline or Deadline(None)
    if budget >= graph.n:
        chosen = set(range(graph.n))
    elif budget <= 0:
        chosen = set()
    else:
        chosen = _Planner(graph, build_units(graph)).run(budget, deadline)
        greedy = greedy_tasks(graph, budget, deadline=deadline)
        if greedy is not None and replicated_fidelity(graph, greedy) > replicated_fidelity(graph, chosen):
            chosen = greedy
    return make_plan(graph, "structure-aware", budget, chosen, time.perf_counter() - start)


class _Planner:
    def __init__(self, graph: TaskGraph, units: UnitDecomposition) -> None:
        self.g = graph
        self.d = units
        self.state = IncrementalFidelity(graph)
        self.alive_count = [0] * len(units.requirements)
        self.requirements_of: list[list[int]] = [[] for _ in range(graph.n)]
        for rid, req in enumerate(units.requirements):
            for u in req.upstream:
                self.requirements_of[u].append(rid)
        self.chosen_downstream = [0] * graph.n
        value = units.value
        unit_of = units.unit_of
        self.ranked_downstream = [
            sorted((v for v in graph.downstream[i] if unit_of[v] != unit_of[i]),
                   key=lambda v: (-units.coefficient[v][i] * value[v], v))
            for i in range(graph.n)
        ]
        self.join = [graph.correlated[i] and len(graph.inputs[i]) > 1 for i in range(graph.n)]
        req_potential = [
            units.coefficient[r.task][r.upstream[0]] * units.potential[r.upstream[0]] for r in units.requirements
        ]
        self.up_score = []
        for s in units.segments:
            p = s.coef
            for rid in s.requirements:
                p *= req_potential[rid]
            self.up_score.append(p)
        # Candidates: structured segments, and per full unit the best remaining task (Alg. 4).
        self.full_order: dict[int, list[int]] = {}
        self.full_pointer: dict[int, int] = {}
        self.candidates: list[int] = []
        for unit in units.units:
            if unit.kind == "full":
                self.full_order[unit.id] = sorted(unit.tasks, key=lambda t: (-value[t], t))
                self.full_pointer[unit.id] = 0
        for s in units.segments:
            if units.units[s.unit].kind != "full":
                self.candidates.append(s.id)
        self.full_active: dict[int, int] = {}
        for uid in self.full_order:
            self._advance_full(uid)

    # ----------------------------------------------------------------- full units (Alg. 4)
    def _advance_full(self, uid: int) -> int | None:
        order, chosen = self.full_order[uid], self.state.chosen
        k = self.full_pointer[uid]
        while k < len(order) and chosen[order[k]]:
            k += 1
        self.full_pointer[uid] = k
        if k == len(order):
            self.full_active.pop(uid, None)
            return None
        sid = self.d.segments_by_root[order[k]][0]
        self.full_active[uid] = sid
        return sid

    def _active(self) -> list[int]:
        return self.candidates + list(self.full_active.values())

    # ----------------------------------------------------------------- candidates (Alg. 3)
    def candidate(self, sid: int) -> tuple[list[int], float]:
        """The new tasks completing segment ``sid`` into an MC-tree, and their true OF gain."""
        d, g, chosen, alive = self.d, self.g, self.state.chosen, self.alive_count
        seg = d.segments[sid]
        new: set[int] = {t for t in seg.tasks if not chosen[t]}
        stack = list(seg.requirements)
        self._complete_upstream(stack, new)
        r = seg.root
        while g.downstream[r] and not self.chosen_downstream[r]:
            if any(v in new for v in g.downstream[r]):
                break
            best, best_score, via = None, -1.0, -1
            for v in self.ranked_downstream[r][:_UPSTREAM_OPTIONS]:
                for s2 in d.segments_by_requirement_task.get(v, ())[:_SEGMENT_OPTIONS]:
                    seg2 = d.segments[s2]
                    cost = sum(1 for t in seg2.tasks if not chosen[t] and t not in new)
                    cost += sum(1 for r2 in seg2.requirements if not alive[r2] and d.requirements[r2].task != v)
                    score = seg2.weight / (1 + cost)
                    if score > best_score:
                        best, best_score, via = seg2, score, v
            if best is None:
                break
            new.update(t for t in best.tasks if not chosen[t])
            op_r = g.operator_of[r]
            for rid in best.requirements:
                req = d.requirements[rid]
                if req.task == via and (not self.join[via] or g.operator_of[req.upstream[0]] == op_r):
                    continue
                stack.append(rid)
            self._complete_upstream(stack, new)
            r = best.root
        tasks = sorted(new)
        return tasks, (self.state.gain(tasks) if tasks else 0.0)

    def _complete_upstream(self, stack: list[int], new: set[int]) -> None:
        d, chosen, alive = self.d, self.state.chosen, self.alive_count
        while stack:
            rid = stack.pop()
            if self.alive_count[rid]:
                continue
            req = d.requirements[rid]
            if any(self._satisfies(req, t) for t in new):
                continue
            coef = d.coefficient[req.task]
            best, best_score = None, -1.0
            for u in req.upstream[:_UPSTREAM_OPTIONS]:
                c = coef[u]
                for s2 in d.segments_by_root.get(u, ())[:_SEGMENT_OPTIONS]:
                    seg2 = d.segments[s2]
                    cost = sum(1 for t in seg2.tasks if not chosen[t] and t not in new)
                    cost += sum(1 for r2 in seg2.requirements if not alive[r2])
                    score = c * self.up_score[s2] / (1 + cost)
                    if score > best_score:
                        best, best_score = seg2, score
            if best is None:
                continue
            new.update(t for t in best.tasks if not chosen[t])
            stack.extend(best.requirements)

    def _satisfies(self, req, t: int) -> bool:
        g = self.g
        if t not in self.d.coefficient[req.task]:
            return False
        if self.join[req.task]:
            return g.operator_of[t] == g.operator_of[req.upstream[0]]
        return self.d.unit_of[t] != self.d.unit_of[req.task]

    # ----------------------------------------------------------------- the loop (Alg. 5)
    def run(self, budget: int, deadline: Deadline) -> set[int]:
        state = self.state
        remaining = budget
        version = 0
        cache: dict[int, tuple[list[int], float, int]] = {}
        by_task: dict[int, set[int]] = {}
        heap: list[tuple[float, float, int, int]] = []

        def evaluate(sid: int) -> None:
            tasks, gain = self.candidate(sid)
            cache[sid] = (tasks, gain, version)
            if tasks and gain > 0.0:
                for t in tasks:
                    by_task.setdefault(t, set()).add(sid)
                heapq.heappush(heap, (-gain / len(tasks), -gain, sid, version))

        for sid in self._active():
            evaluate(sid)
        exhaustive = len(self.candidates) + len(self.full_active) <= EXHAUSTIVE_LIMIT
        while remaining > 0 and heap and not deadline.expired():
            _, _, sid, stamp = heapq.heappop(heap)
            tasks, gain, evaluated = cache[sid]
            if evaluated != stamp:
                continue  # superseded by a later evaluation
            if evaluated != version:
                evaluate(sid)
                continue
            if len(tasks) > remaining or gain <= 0.0:
                continue
            was_alive = {t: state.alive[t] > 0 for t in tasks}
            state.commit(tasks)
            remaining -= len(tasks)
            version += 1
            for t in tasks:
                if not was_alive[t] and state.alive[t] > 0:
                    for rid in self.requirements_of[t]:
                        self.alive_count[rid] += 1
                for u in self.d.coefficient[t]:
                    self.chosen_downstream[u] += 1
            touched = set()
            for t in tasks:
                touched |= by_task.pop(t, set())
            for uid, active in list(self.full_active.items()):
                if state.chosen[self.d.segments[active].root]:
                    new_sid = self._advance_full(uid)
                    if new_sid is not None:
                        touched.add(new_sid)
            if exhaustive:
                touched = set(self._active())
            else:
                active_full = set(self.full_active.values())
                touched = {s for s in touched if s in active_full or self.d.units[self.d.segments[s].unit].kind != "full"}
            for s in touched:
                evaluate(s)
        return {i for i in range(self.g.n) if state.chosen[i]}
