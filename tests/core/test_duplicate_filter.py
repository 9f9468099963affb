"""Paper 001's duplicate filter (Algorithm 1, Theorem 1), the sort stage, and the serving view."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ft_core.transparency.duplicate_filter import (
    DuplicateFilter,
    Item,
    Punctuation,
    RowIdentity,
    check_transparency,
    interleave_by_arrival,
    merge_replica_streams,
    serving_view,
    sort_by_punctuation,
)

# --- paper Fig. 1 ---------------------------------------------------------------------------------

FIG1 = [("9:00:00", "B", 80), ("9:00:01", "B", 90), ("9:00:00", "C", 50), ("9:00:01", "C", 40)]


def _load(t, replica):
    ts, server, load = t
    return Item(identity=(ts, server, load), timestamp=ts, payload=replica)


def test_fig1_two_union_replicas_pass_each_load_tuple_once_from_the_earliest_copy():
    # u2,1 and u2,2 emit the same 4 tuples in different orders; the join's filter receives 8
    u21 = [FIG1[0], FIG1[2], FIG1[1], FIG1[3]]
    u22 = [FIG1[2], FIG1[3], FIG1[0], FIG1[1]]
    arrivals = [("u22", _load(u22[0], "u22")), ("u21", _load(u21[0], "u21")), ("u21", _load(u21[1], "u21")),
                ("u22", _load(u22[1], "u22")), ("u22", _load(u22[2], "u22")), ("u21", _load(u21[2], "u21")),
                ("u21", _load(u21[3], "u21")), ("u22", _load(u22[3], "u22"))]
    merged = merge_replica_streams(arrivals)
    passed = {item.identity: item.payload for item in merged.items}
    assert len(merged.items) == 4 and set(passed) == set(FIG1)
    assert merged.duplicates == 4 and merged.late == 0
    # the earliest copy of each tuple wins
    assert passed == {FIG1[2]: "u22", FIG1[0]: "u21", FIG1[3]: "u22", FIG1[1]: "u21"}
    assert merged.first_arrivals == {"u22": 2, "u21": 2}


def test_multiset_semantics_a_tuple_occurring_twice_is_passed_twice():
    f = DuplicateFilter()
    decisions = [f.offer("r1", "t", 1), f.offer("r2", "t", 1), f.offer("r2", "t", 1), f.offer("r1", "t", 1)]
    assert decisions == [True, False, True, False]  # the 2nd occurrence arrives first from r2


def test_punctuation_drops_later_copies_and_frees_counters():
    f = DuplicateFilter()
    assert f.offer("r1", "a", 5) and f.offer("r1", "b", 9)
    assert f.punctuate("r1", 5) is True
    assert "a" not in f.counts and "b" in f.counts  # counters of ts <= 5 are gone, later ones stay
    assert f.offer("r2", "a", 5) is False and f.late == 1  # r1 already delivered everything <= 5
    assert f.punctuate("r2", 5) is False and f.punctuate("r2", 4) is False  # not larger: not forwarded
    assert f.punctuate("r2", 9) is True and f.counts == {} and f.max_count == {} and f.expiry == []


def test_a_replica_that_skips_a_tuple_breaks_the_guarantee():
    # Theorem 1 needs in-order, reliable delivery (TCP) and fail-stop replicas. A replica that
    # silently loses "a" and then punctuates past it makes the filter drop the other copy: the
    # documented precondition, not a property of the filter.
    merged = merge_replica_streams([("r1", Punctuation(5)), ("r2", Item("a", 5)), ("r2", Punctuation(5))])
    assert merged.items == [] and merged.late == 1


# --- Theorem 1 over random interleavings ------------------------------------------------------------

@st.composite
def replica_runs(draw):
    """An ideal stream in punctuated segments, k replicas that reorder each segment and fail-stop
    after a prefix, and one interleaving that keeps each replica's own order."""
    segments = draw(st.lists(st.lists(st.integers(0, 3), max_size=5), min_size=1, max_size=4))
    ideal: list[Item] = []
    for seg, values in enumerate(segments):
        ideal.extend(Item((seg, v), seg) for v in values)  # repeated values: multiset semantics
    k = draw(st.integers(1, 4))
    replicas = []
    for _ in range(k):
        events: list[Item | Punctuation] = []
        for seg, values in enumerate(segments):
            order = draw(st.permutations([Item((seg, v), seg) for v in values]))
            events.extend(order)
            events.append(Punctuation(seg))
        cut = draw(st.integers(0, len(events)))  # fail-stop: a prefix
        replicas.append(events[:cut])
    picks = draw(st.permutations([r for r, events in enumerate(replicas) for _ in events]))
    position = [0] * k
    arrivals = []
    for r in picks:
        arrivals.append((f"r{r}", replicas[r][position[r]]))
        position[r] += 1
    return ideal, replicas, arrivals


@settings(max_examples=300, deadline=None)
@given(replica_runs())
def test_theorem1_each_occurrence_passed_once_iff_some_replica_delivered_it(run):
    _, replicas, arrivals = run
    merged = merge_replica_streams(arrivals)
    # oracle: a tuple delivered m_i times by replica i is passed max_i m_i times (no loss, no duplicate)
    expected = Counter()
    for events in replicas:
        for identity, n in Counter(e.identity for e in events if isinstance(e, Item)).items():
            expected[identity] = max(expected[identity], n)
    assert Counter(item.identity for item in merged.items) == expected


@settings(max_examples=300, deadline=None)
@given(replica_runs())
def test_theorem1_with_one_complete_replica_the_output_is_the_unreplicated_stream(run):
    ideal, _, arrivals = run
    # one more replica delivers everything (ideal order, then its punctuations), after the others
    full = list(ideal) + [Punctuation(seg) for seg in sorted({i.timestamp for i in ideal})]
    merged = merge_replica_streams(arrivals + [("full", e) for e in full])
    assert Counter(i.identity for i in merged.items) == Counter(i.identity for i in ideal)


@settings(max_examples=300, deadline=None)
@given(replica_runs())
def test_non_blocking_first_arrival_and_punctuation_invariants(run):
    _, _, arrivals = run
    dedup = DuplicateFilter()
    delivered: dict[tuple[str, object], int] = Counter()
    passed_so_far: Counter = Counter()
    forwarded = []
    for replica, event in arrivals:
        if isinstance(event, Punctuation):
            if dedup.punctuate(replica, event.timestamp):
                forwarded.append(event.timestamp)
                assert all(ts > event.timestamp for ts, _, _ in dedup.expiry)  # no counter left at or before p
            continue
        before = dedup.max_punctuation
        delivered[(replica, event.identity)] += 1
        m = delivered[(replica, event.identity)]
        # first arrival of the m-th occurrence: no replica has delivered m copies before, and no
        # replica has punctuated past it
        first = passed_so_far[event.identity] < m and (before is None or event.timestamp > before)
        assert dedup.offer(replica, event.identity, event.timestamp) is first
        if first:
            passed_so_far[event.identity] += 1
    assert forwarded == sorted(set(forwarded))  # output punctuations strictly increase


@settings(max_examples=200, deadline=None)
@given(replica_runs(), st.randoms(use_true_random=False))
def test_sort_stage_gives_every_interleaving_the_same_order(run, rnd):
    _, replicas, arrivals = run
    # a second interleaving of the same replica streams
    picks = [r for r, events in enumerate(replicas) for _ in events]
    rnd.shuffle(picks)
    position = [0] * len(replicas)
    other = []
    for r in picks:
        other.append((f"r{r}", replicas[r][position[r]]))
        position[r] += 1
    first = sort_by_punctuation(merge_replica_streams(arrivals).output)
    second = sort_by_punctuation(merge_replica_streams(other).output)
    assert [i.identity for i in first] == [i.identity for i in second]
    assert [i.identity for i in first] == sorted((i.identity for i in first), key=lambda ident: (ident[0], repr(ident)))


# --- windowed rows from several replica queries ------------------------------------------------------

WINDOWED = RowIdentity(window_fields=("window_start", "window_end"), key_fields=("sensor",))


def _row(start, sensor, value):
    return {"window_start": start, "window_end": start + 10, "sensor": sensor, "avg_speed": value}


def test_windowed_rows_are_deduplicated_by_window_and_key_across_three_replicas():
    reference = [_row(0, "s1", 50.0), _row(0, "s2", 61.5), _row(10, "s1", 48.0)]
    streams = {
        "primary": [(0.5, WINDOWED.item(reference[0])), (0.6, WINDOWED.item(reference[1])), (0.7, Punctuation(10))],
        "replica-a": [(0.2, WINDOWED.item(reference[1])), (1.1, WINDOWED.item(reference[2]))],
        "replica-b": [(0.9, WINDOWED.item(reference[0])), (1.0, WINDOWED.item(reference[2])), (1.2, Punctuation(20))],
    }
    report = check_transparency(reference, streams)
    assert report.transparent and report.output_rows == 3
    assert report.first_arrivals == {"primary": 1, "replica-a": 1, "replica-b": 1}
    # primary's s2 row came second (counter); replica-b's window-0 row came after punctuation 10 (late)
    assert report.duplicates_dropped == 2 and report.late_dropped == 1
    assert WINDOWED.time_field == "window_end" and WINDOWED.identity(reference[0]) == (0, 10, "s1")


def test_transparency_report_names_missing_and_unexpected_rows():
    reference = [_row(0, "s1", 50.0), _row(0, "s2", 61.5)]
    inconsistent = _row(0, "s2", 99.0)  # a nondeterministic replica computed another value
    report = check_transparency(reference, {"r1": [(0.1, WINDOWED.item(reference[0]))],
                                            "r2": [(0.2, WINDOWED.item(inconsistent))]})
    assert not report.transparent and report.missing == [reference[1]] and report.unexpected == [inconsistent]


def test_interleave_by_arrival_orders_by_time_ties_by_replica_and_rejects_reordering():
    a, b, c = Item("x", 1), Item("y", 1), Item("z", 2)
    order = interleave_by_arrival({"r1": [(0.5, a), (1.0, b)], "r2": [(0.7, c), (1.0, a)]})
    assert order == [("r1", a), ("r2", c), ("r1", b), ("r2", a)]  # the tie at 1.0 goes to r1 (listed first)
    with pytest.raises(ValueError, match="arrives before"):
        interleave_by_arrival({"r1": [(1.0, a), (0.5, b)]})


# --- serving view -----------------------------------------------------------------------------------

@st.composite
def failure_runs(draw):
    windows = draw(st.integers(1, 6))
    keys = ["k1", "k2", "k3"]
    truth = [_row(10 * w, k, float(draw(st.integers(0, 100)))) for w in range(windows) for k in keys
             if draw(st.booleans())]
    delivered = draw(st.sets(st.integers(0, windows - 1)))
    accurate = [r for r in truth if r["window_start"] // 10 in delivered]
    # the replica sees part of the input: some keys missing, other values, and keys the truth lacks
    tentative = [_row(10 * w, k, float(draw(st.integers(0, 100)))) for w in range(windows) for k in keys
                 if draw(st.booleans())]
    return truth, delivered, draw(st.permutations(accurate)), draw(st.permutations(tentative))


def _content(rows):
    return sorted((r["window_start"], r["sensor"], r["avg_speed"]) for r in rows)


@settings(max_examples=300, deadline=None)
@given(failure_runs())
def test_serving_view_serves_accurate_windows_else_flagged_tentative_ones(run):
    truth, delivered, accurate, tentative = run
    served = serving_view(accurate, tentative, WINDOWED, predicted_of=0.8)
    primary_windows = {r["window_start"] for r in accurate}
    for row in served:
        if row["window_start"] in primary_windows:
            assert row["tentative"] is False and row["predicted_of"] is None
        else:
            assert row["tentative"] is True and row["predicted_of"] == 0.8
    accurate_part = [r for r in served if not r["tentative"]]
    assert _content(accurate_part) == _content(accurate)
    # no gap: every window someone produced is served
    assert {r["window_start"] for r in served} == primary_windows | {r["window_start"] for r in tentative}
    # once the primary has delivered everything, the content is the failure-free output
    final = serving_view(truth, tentative, WINDOWED, predicted_of=0.8, primary_complete_through=10 * 6)
    assert _content(final) == _content(truth) and not any(r["tentative"] for r in final)


def test_serving_view_replaces_per_window_not_per_key():
    accurate = [_row(0, "s1", 50.0)]
    tentative = [_row(0, "s1", 47.0), _row(0, "s9", 12.0), _row(10, "s1", 49.0), _row(10, "s1", 1.0)]
    served = serving_view(accurate, tentative, WINDOWED, predicted_of=0.75)
    # s9 only the replica saw: it must go once window 0 is accurate; window 10: first row wins
    assert [(r["window_start"], r["sensor"], r["avg_speed"], r["tentative"]) for r in served] == [
        (0, "s1", 50.0, False), (10, "s1", 49.0, True)]
    assert served[1]["predicted_of"] == 0.75 and "tentative" not in tentative[2]  # input rows untouched


def test_serving_view_drops_tentative_rows_of_windows_the_primary_closed_empty():
    served = serving_view([], [_row(0, "s1", 5.0), _row(10, "s1", 6.0)], WINDOWED, primary_complete_through=10)
    assert [r["window_start"] for r in served] == [10]


def test_serving_view_needs_window_fields():
    with pytest.raises(ValueError, match="window fields"):
        serving_view([], [], RowIdentity(key_fields=("sensor",)))
