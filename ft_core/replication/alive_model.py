"""The exact replication planner's MILP: alive fractions, counts for interchangeable tasks, products.

Problem (paper 000, Section III-B and IV-A): choose ``P``, ``|P| <= R``, maximising OF with every
task outside ``P`` failed. In alive fractions ``A = 1 - IL`` (see
:mod:`ft_core.replication.incremental_fidelity`) a task's value is its choice times a function of
its inputs: ``A_i = x_i * F_i`` with ``F_i = 1`` at a source, a weighted sum of upstream values for
an independent task (Eq. 1/3) and a product of per-stream sums for a join (Eq. 2); OF is the
Eq. 4-weighted sum at the sinks. This module writes that as a mixed-integer *linear* program whose
optimum is the true optimum.

Formulation (why each piece; issue 19 measured the old model's weak bound on Spark-like shapes):

- *Atoms.* A task-level task ``i`` (binary ``x_i``); an interchangeable operator ``V`` seen by one
  consumer ``c`` (:mod:`ft_core.replication.interchangeable`: a count ``k`` of replicated tasks, value
  ``rho_c(k) * F_V``), so ``n`` symmetric tasks become ``n`` values of a count and branch-and-bound
  stops enumerating equivalent plans. The count is coded by binaries ``y_V,j = [k >= j]`` (ordered,
  ``z_V,k = y_V,k - y_V,k+1`` is "exactly k"): branching on ``y`` halves the counts left, which HiGHS
  searched better than one-hot ``z`` (bounds 10-60% lower after 20 s on the hard runs of issue 19's
  shapes, same LP relaxation); and an operator-level stream from a task-level
  operator (value ``sum_u s_u A_u``), so a full stream costs ``|U| + |V|`` non-zeros, not ``|U| * |V|``
  flows. Across a full stream two sub-topologies interact only through such one-number values: the
  decomposition into sub-topologies of the paper, done by the model.
- *Products.* A join multiplies its input streams; a product of two continuous values is not
  linear, but a binary (or one-hot) choice times a value in [0, 1] is, exactly. So a product is built
  one factor at a time: the product so far is one variable, the *context* ``C``, and the next factor
  is expanded down to the choices with ``C`` carried along. ``q(C, a)``, ``C`` times atom ``a``'s
  value, is bounded by ``q(C, i) <= x_i`` and ``q(C, i) <= C * F_i`` for a task, ``F_i`` expanded in
  turn (a sum of ``q(C, b)`` over its inputs; for a join, a chain of contexts, one per stream), and
  by ``q(C, V) <= sum_k rho(k) w_k``, ``w_k <= z_V,k``, ``sum_k w_k <= C * F_V`` for an
  interchangeable operator. Every expansion ends at sources, so with integral choices the largest
  feasible ``q`` is exactly the product: the model is exact with joins (the old model relaxed a
  join's product to the minimum of its inputs). A join of ``m`` streams costs the sum, not the
  product, of its inputs' cones.
- *Tightening.* A factor's bound goes through one flow per input ``b`` (``f_b <= x_i``,
  ``f_b <= q(C, b)``, ``q <= sum_b c_b f_b``; ``w_kb`` likewise for counts): a sum of minima, tighter
  in the LP relaxation than the minimum of the sum.
- *Size cap.* Contexts can multiply (joins of joins). Past ``max_nonzeros``, or when the deadline
  passes while building, the remaining products are bounded by ``q(C, a) <= C`` and
  ``q(C, a) <= q(1, a)`` (a product of values in [0, 1] is at most each factor): the model stays a
  valid relaxation, its optimum an upper bound, and ``exact`` says which one was built.

Complexity: O(T + S) columns and rows without joins; each context adds columns in proportion to the
cone of the factor it meets (the total bounded by ``max_nonzeros``).

Example (Fig. 2 with the join: the best 3 replicas keep OF 0.4)::

    >>> from ft_core.samples import load_sample
    >>> from ft_core.highs import solve_milp
    >>> g = load_sample("fig2-join")
    >>> model = build_alive_model(g, 3)
    >>> res = solve_milp(model.cost, model.matrix, model.upper, model.integrality, time_limit=10)
    >>> sorted(g.task_ids[i] for i in model.decode(res.x)), round(-res.fun, 4), model.exact
    (['O1[1]', 'O2[0]', 'O3[0]'], 0.4, True)
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix

from ft_core.deadline import Deadline
from ft_core.replication.budget_bound import Atom, value_caps
from ft_core.replication.interchangeable import SINK, InterchangeableOperator, interchangeable_operators, operator_level_streams
from ft_core.topology.task_graph import TaskGraph, rate_shares

# A tiny cost per replica so that the solver does not pick useless tasks; far below any tolerance.
TASK_PENALTY = 1e-10
DEFAULT_MAX_NONZEROS = 3_000_000
_MAX_CAP_CELLS = 4_000_000  # atoms x (budget + 1) past which the budget caps are not computed
_CHECK_EVERY = 256  # states built between deadline checks


@dataclass
class AliveModel:
    """The MILP ``min cost @ v, matrix @ v <= upper, 0 <= v <= 1`` and how to read its solutions."""

    graph: TaskGraph
    cost: np.ndarray
    matrix: csr_matrix
    upper: np.ndarray
    integrality: np.ndarray
    task_column: dict[int, int]
    count_columns: dict[str, list[int]]  # operator -> y_j = [count >= j] columns, j = 1..n
    groups: dict[str, InterchangeableOperator]
    exact: bool
    products: int  # product variables q(C, a) with a context

    def decode(self, values) -> set[int]:
        """The replicated task indices of a solution vector."""
        chosen = {i for i, col in self.task_column.items() if values[col] > 0.5}
        for op, cols in self.count_columns.items():
            k = sum(1 for col in cols if values[col] > 0.5)
            chosen.update(self.groups[op].order[:k])
        return chosen

    def start(self, chosen: set[int]) -> dict[int, float]:
        """The integral columns of a plan (a MIP start): an interchangeable operator's count is how many
        of its tasks the plan replicates (its first tasks in rank order are at least as good)."""
        values = {col: float(i in chosen) for i, col in self.task_column.items()}
        for op, cols in self.count_columns.items():
            k = sum(1 for t in self.groups[op].order if t in chosen)
            values.update({col: float(kk <= k) for kk, col in enumerate(cols, start=1)})
        return values


class OutOfTime(Exception):
    """Building the model passed its hard deadline: there is no model (and no bound) to use."""


def build_alive_model(graph: TaskGraph, budget: int, *, max_nonzeros: int = DEFAULT_MAX_NONZEROS,
                      deadline: Deadline | None = None, hard_deadline: Deadline | None = None) -> AliveModel:
    """The MILP for ``budget`` replicas (see the module doc). Past ``deadline`` the remaining products
    are relaxed; past ``hard_deadline`` building stops with :class:`OutOfTime`."""
    return _Builder(graph, max_nonzeros, deadline or Deadline(None), hard_deadline or Deadline(None)).build(budget)


class _Builder:
    def __init__(self, graph: TaskGraph, max_nonzeros: int, deadline: Deadline, hard_deadline: Deadline) -> None:
        self.g = graph
        self.max_nonzeros = max_nonzeros
        self.deadline = deadline
        self.hard_deadline = hard_deadline
        self.streams = operator_level_streams(graph)
        self.groups = interchangeable_operators(graph, self.streams)
        self.cost: list[float] = []
        self.integer: list[bool] = []
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.upper: list[float] = []
        self.exact = True
        self.q_col: dict[tuple[int | None, int], int] = {}
        self.chain: dict[tuple[int | None, int, int], int] = {}
        self.queue: deque[tuple[int | None, int]] = deque()
        self._atoms(graph)

    # ------------------------------------------------------------------ atoms
    def _atoms(self, g: TaskGraph) -> None:
        """Task-level tasks are atoms ``0..n-1``; operator-level streams and counts are numbered after them."""
        self.kind: list[str] = ["task"] * g.n
        self.ref: list[object] = list(range(g.n))
        self.stream_atom: dict[tuple[str, str], int] = {}
        for (u, v), shares in self.streams.items():
            if u in self.groups or len(g.tasks_of[u]) < 2 or len(g.tasks_of[v]) < 2:
                continue  # a count already is one value; a one-task side gains nothing from the atom
            self.stream_atom[(u, v)] = self._new_atom("stream", (u, shares))
        self.group_atom: dict[tuple[str, str], int] = {}
        for op, group in self.groups.items():
            seen: dict[tuple[float, ...], int] = {}
            for consumer, rho in group.prefix_shares.items():
                key = tuple(round(r, 12) for r in rho)
                if key not in seen:  # consumers with the same rho(k) see the same value
                    seen[key] = self._new_atom("count", (op, rho))
                self.group_atom[(op, consumer)] = seen[key]

    def _new_atom(self, kind: str, ref: object) -> int:
        self.kind.append(kind)
        self.ref.append(ref)
        return len(self.kind) - 1

    def _input_forms(self, task: int) -> list[dict[int, float]]:
        """``task``'s inputs as linear forms over atoms: one per stream (join) or one in all (independent)."""
        g = self.g
        v = g.operator_of[task]
        forms = []
        for s in g.inputs[task]:
            if (s.operator, v) in self.group_atom:
                forms.append({self.group_atom[(s.operator, v)]: 1.0})
            elif (s.operator, v) in self.stream_atom:
                forms.append({self.stream_atom[(s.operator, v)]: 1.0})
            else:
                forms.append(dict(zip(s.upstream, rate_shares(s.rates))))
        if g.correlated[task] and len(forms) > 1:
            return forms
        weights = rate_shares([s.total_rate for s in g.inputs[task]])
        merged: dict[int, float] = {}
        for form, w in zip(forms, weights):
            for atom, c in form.items():
                merged[atom] = merged.get(atom, 0.0) + w * c
        return [merged]

    # ------------------------------------------------------------------ matrix
    def _col(self, cost: float = 0.0, integer: bool = False) -> int:
        self.cost.append(cost)
        self.integer.append(integer)
        return len(self.cost) - 1

    def _row(self, entries, ub: float = 0.0) -> None:
        r = len(self.upper)
        for col, val in entries:
            self.rows.append(r)
            self.cols.append(col)
            self.vals.append(val)
        self.upper.append(ub)

    # ------------------------------------------------------------------ products
    def _q(self, context: int | None, atom: int) -> int:
        """The column of ``context * atom`` (``context`` a column, None for 1), created and queued on first use."""
        key = (context, atom)
        col = self.q_col.get(key)
        if col is None:
            col = self._col()
            self.q_col[key] = col
            self.queue.append(key)
        return col

    def _last_factor(self, context: int | None, first: int, forms: list[dict[int, float]]):
        """``context * prod(forms)`` as (a last context, the last form): the earlier forms become a chain of
        context columns ``r_j <= sum_b c_b q(r_{j-1}, b)``, shared by every use of ``first``'s inputs."""
        for j, form in enumerate(forms[:-1]):
            key = (context, first, j)
            r = self.chain.get(key)
            if r is None:
                r = self._col()
                self.chain[key] = r
                self._row([(r, 1.0)] + [(self._q(context, b), -c) for b, c in form.items()])
            context = r
        return context, forms[-1]

    def build(self, budget: int) -> AliveModel:
        g = self.g
        self.task_column = {i: self._col(TASK_PENALTY, True) for i in range(g.n) if g.operator_of[i] not in self.groups}
        self.count_columns = {op: [self._col(TASK_PENALTY, True) for _ in grp.order] for op, grp in self.groups.items()}
        for cols in self.count_columns.values():
            for lower, higher in zip(cols, cols[1:]):
                self._row([(higher, 1.0), (lower, -1.0)])  # y_k+1 <= y_k: a count, not a set
        self._row([(col, 1.0) for col in self.task_column.values()]
                  + [(col, 1.0) for cols in self.count_columns.values() for col in cols], float(budget))
        self.forms = {i: self._input_forms(i) for i in range(g.n) if g.inputs[i]
                      and (g.operator_of[i] not in self.groups or i == self.groups[g.operator_of[i]].order[0])}
        self.budget = budget
        self.caps = self._value_caps(budget)
        sink_weight = dict(zip(g.sinks, rate_shares([g.rate[s] for s in g.sinks])))
        for s, w in sink_weight.items():
            if g.operator_of[s] not in self.groups:
                self.cost[self._q(None, s)] -= w
        for op in self.groups:
            if (op, SINK) in self.group_atom:
                self.cost[self._q(None, self.group_atom[(op, SINK)])] -= 1.0
        built = 0
        while self.queue:
            key = self.queue.popleft()
            context, atom = key
            built += 1
            if built % _CHECK_EVERY == 0:
                if self.hard_deadline.expired():
                    raise OutOfTime(f"building the model took longer than {self.hard_deadline.seconds:.2f} s")
                if self.exact and (len(self.vals) > self.max_nonzeros or self.deadline.expired()):
                    self.exact = False
            if context is not None and not self.exact:  # relaxed: q(C, a) <= C and q(C, a) <= q(1, a)
                q = self.q_col[key]
                self._row([(q, 1.0), (context, -1.0)])
                self._row([(q, 1.0), (self._q(None, atom), -1.0)])
            else:
                self._expand(self.q_col[key], context, atom)
        matrix = csr_matrix((self.vals, (self.rows, self.cols)), shape=(len(self.upper), len(self.cost)))
        return AliveModel(g, np.array(self.cost), matrix, np.array(self.upper), np.array(self.integer, dtype=float),
                          self.task_column, self.count_columns, self.groups, self.exact,
                          sum(1 for c, _ in self.q_col if c is not None))

    @staticmethod
    def _exactly(ys: list[int], k: int) -> list[tuple[int, float]]:
        """``[count == k]`` in the thermometer columns ``y_j = [count >= j]``: ``y_k - y_k+1``."""
        return [(ys[k - 1], 1.0)] + ([(ys[k], -1.0)] if k < len(ys) else [])

    def _value_caps(self, budget: int) -> dict[int, np.ndarray]:
        """:func:`value_caps` of every atom (empty when the table would be too large)."""
        g = self.g
        real = [a for a in range(len(self.kind)) if a >= g.n or g.operator_of[a] not in self.groups]
        if len(real) * (budget + 1) > _MAX_CAP_CELLS:
            return {}
        last = {op: tasks[-1] for op, tasks in g.tasks_of.items()}
        rank = {"task": 0, "stream": 1, "count": 2}

        def position(a: int) -> tuple[int, int]:
            if self.kind[a] == "task":
                return (a, 0)
            return (last[self.ref[a][0]], rank[self.kind[a]])

        ordered = sorted(real, key=position)
        index = {a: k for k, a in enumerate(ordered)}
        atoms: list[Atom] = []
        for a in ordered:
            if self.kind[a] == "stream":
                u, shares = self.ref[a]
                choices, forms = [], [dict(zip(g.tasks_of[u], shares))]
            elif self.kind[a] == "count":
                op, rho = self.ref[a]
                choices, forms = list(enumerate(rho))[1:], self.forms.get(self.groups[op].order[0], [])
            else:
                choices, forms = [(1, 1.0)], self.forms.get(a, [])
            forms = [{index[b]: c for b, c in form.items()} for form in forms]
            cone = 1 << index[a] if choices else 0
            for form in forms:
                for b in form:
                    cone |= atoms[b].cone
            atoms.append(Atom(choices, forms, cone))
        caps = value_caps(atoms, budget)
        return {a: caps[index[a]] for a in ordered}

    def _expand(self, q: int, context: int | None, atom: int) -> None:
        kind = self.kind[atom]
        if kind == "stream":  # no choice of its own: q <= sum_u s_u q(C, u)
            u, shares = self.ref[atom]
            self._row([(q, 1.0)] + [(self._q(context, t), -c) for t, c in zip(self.g.tasks_of[u], shares)])
            return
        if kind == "count":
            op, rho = self.ref[atom]
            ys = self.count_columns[op]
            choices = [(self._exactly(ys, k), k, rho[k]) for k in range(1, len(ys) + 1)]  # ([z_k as y's], k, rho(k))
            first = self.groups[op].order[0]
        else:
            choices = [([(self.task_column[atom], 1.0)], 1, 1.0)]
            first = atom
        forms = self.forms.get(first)
        if forms is None:  # a source: the choice times the context
            targets = [(context, None, 1.0)] if context is not None else []
        else:
            context, form = self._last_factor(context, first, forms)
            targets = [(self._q(context, b), b, c) for b, c in form.items()]
        if not targets:
            self._row([(q, 1.0)] + [(y, -r * sign) for z, _, r in choices for y, sign in z])
            return
        entries = [(q, 1.0)]
        for target, b, c in targets:
            # q <= sum_b c_b sum_k rho(k) w_kb, w_kb <= U_b(R - k) z_k, sum_k w_kb <= target (budget_bound)
            cap = self.caps.get(b)
            ws = [self._col() for _ in choices]
            for w, (z, k, _) in zip(ws, choices):
                bound = 1.0 if cap is None else (float(cap[self.budget - k]) if k <= self.budget else 0.0)
                self._row([(w, 1.0)] + [(y, -bound * sign) for y, sign in z])
            self._row([(w, 1.0) for w in ws] + [(target, -1.0)])
            entries += [(w, -c * r) for w, (_, _, r) in zip(ws, choices)]
        self._row(entries)
