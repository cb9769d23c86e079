"""Fusion rules against hand-computed tables, and the adversarial benchmark's published numbers."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

from memorywire.core.fusion import (
    DEFAULT_RRF_K,
    FusedItem,
    boosted,
    checked_weight,
    fuse,
    graph_boost,
    hop_distances,
    max_fusion,
    rrf,
    weighted,
)
from memorywire.errors import InvalidRequest

# binary fractions, so the hand-computed sums are exact in floating point
A = [("x", 0.75), ("y", 0.5), ("z", 0.125)]
B = [("y", 0.625), ("w", 0.5)]
C = [("z", 1.0), ("x", 0.25)]


def scores(items: list[FusedItem]) -> list[tuple[str, float]]:
    return [(i.id, i.score) for i in items]


def assert_table(got: list[FusedItem], want: list[tuple[str, float]]) -> None:
    assert [i.id for i in got] == [w[0] for w in want]
    for item, (_, expected) in zip(got, want, strict=True):
        assert math.isclose(item.score, expected, rel_tol=1e-12), (item.id, item.score, expected)


@pytest.mark.parametrize(
    ("lists", "kwargs", "want"),
    [
        # top hit alone scores 1/60
        ({"a": [("x", 0.5)]}, {}, [("x", 1 / 60)]),
        (
            {"a": A, "b": B},
            {},
            # y: 1/61 + 1/60; x: 1/60; w: 1/61; z: 1/62
            [("y", 1 / 61 + 1 / 60), ("x", 1 / 60), ("w", 1 / 61), ("z", 1 / 62)],
        ),
        (
            {"a": A, "b": B, "c": C},
            {},
            # x: 1/60+1/61, y: 1/61+1/60 -> tie on score and lists; best rank 0 both -> id order
            [("x", 1 / 60 + 1 / 61), ("y", 1 / 61 + 1 / 60), ("z", 1 / 62 + 1 / 60),
             ("w", 1 / 61)],
        ),
        ({"a": A, "b": B}, {"k": 1}, [("y", 1 / 2 + 1 / 1), ("x", 1.0), ("w", 0.5),
                                      ("z", 1 / 3)]),
        ({"a": A, "b": B, "c": C}, {"quorum": 2},
         [("x", 1 / 60 + 1 / 61), ("y", 1 / 61 + 1 / 60), ("z", 1 / 62 + 1 / 60)]),
        ({"a": A, "b": B}, {"quorum": 3}, []),
        # a duplicate inside one list counts once, at its first position
        ({"a": [("x", 1.0), ("x", 0.9), ("y", 0.8)]}, {}, [("x", 1 / 60), ("y", 1 / 62)]),
    ],
)
def test_rrf_table(
    lists: dict[str, list[tuple[str, float]]], kwargs: dict[str, int],
    want: list[tuple[str, float]],
) -> None:
    assert_table(rrf(lists, **kwargs), want)


def test_rrf_ignores_reported_scores() -> None:
    honest = rrf({"a": [("x", 0.1), ("y", 0.05)]})
    inflated = rrf({"a": [("x", 1e9), ("y", 1e8)]})
    assert scores(honest) == scores(inflated)


@pytest.mark.parametrize(
    ("lists", "kwargs", "want"),
    [
        ({"a": A, "b": B}, {}, [("x", 0.75), ("y", 0.625), ("w", 0.5), ("z", 0.125)]),
        ({"a": A, "b": B, "c": C}, {}, [("z", 1.0), ("x", 0.75), ("y", 0.625), ("w", 0.5)]),
        ({"a": A, "b": B, "c": C}, {"quorum": 2}, [("z", 1.0), ("x", 0.75), ("y", 0.625)]),
    ],
)
def test_max_table(
    lists: dict[str, list[tuple[str, float]]], kwargs: dict[str, int],
    want: list[tuple[str, float]],
) -> None:
    assert_table(max_fusion(lists, **kwargs), want)


@pytest.mark.parametrize(
    ("weights", "want"),
    [
        # y and z tie at 1.125, both in 2 lists at best rank 0 -> id order
        (None, [("y", 1.125), ("z", 1.125), ("x", 1.0), ("w", 0.5)]),
        # a: 2.0, b: 0.5, c missing -> 1.0
        ({"a": 2.0, "b": 0.5}, [("x", 1.75), ("y", 1.3125), ("z", 1.25), ("w", 0.25)]),
        ({"a": 0.0, "b": 0.0, "c": 0.0}, [("x", 0.0), ("y", 0.0), ("z", 0.0), ("w", 0.0)]),
    ],
)
def test_weighted_table(
    weights: dict[str, float] | None, want: list[tuple[str, float]]
) -> None:
    assert_table(weighted({"a": A, "b": B, "c": C}, weights), want)


def test_tie_breaking_is_lists_then_rank_then_id() -> None:
    # all score 1.0 under max: q is in two lists, p and r in one; p ranks 0, r ranks 0, s ranks 1
    lists = {"a": [("r", 1.0), ("s", 1.0)], "b": [("p", 1.0), ("q", 1.0)], "c": [("q", 0.5)]}
    assert [i.id for i in max_fusion(lists)] == ["q", "p", "r", "s"]


def test_best_store_is_best_rank_then_higher_score_then_given_order() -> None:
    lists = {"a": [("y", 0.3), ("x", 0.5)], "b": [("x", 0.9)], "c": [("x", 0.9)],
             "d": [("q", 0.1), ("y", 0.7)]}
    got = {i.id: i for i in rrf(lists)}
    assert (got["x"].best_store, got["x"].best_rank) == ("b", 0)
    assert got["x"].stores == ("a", "b", "c")
    assert (got["y"].best_store, got["y"].best_rank) == ("a", 0)


def test_fuse_dispatches_and_rejects_unknown_mode() -> None:
    lists = {"a": A, "b": B}
    assert scores(fuse(lists, "rrf")) == scores(rrf(lists))
    assert scores(fuse(lists, "max")) == scores(max_fusion(lists))
    assert scores(fuse(lists, "weighted", weights={"a": 3})) == scores(weighted(lists, {"a": 3}))
    with pytest.raises(ValueError):
        fuse(lists, "borda")
    with pytest.raises(ValueError):
        rrf(lists, quorum=0)
    with pytest.raises(ValueError):
        rrf(lists, k=0)
    with pytest.raises(ValueError):
        weighted(lists, {"a": float("nan")})


def test_fusion_is_deterministic_for_equal_input() -> None:
    up = [(f"m{i}", 1.0) for i in range(30)]
    lists = {"a": up, "b": up[::-1]}
    assert fuse(lists, "rrf") == fuse(dict(lists), "rrf")
    assert [i.id for i in fuse(lists, "max")][:3] == ["m0", "m29", "m1"]


def test_hop_distances_bfs_undirected_bounded() -> None:
    adj = {"a": {"b"}, "b": {"c"}, "c": {"d"}, "e": {"a"}}
    d = hop_distances(adj, ["a", "d", "zz"], hops=2)
    assert d["a"] == {"b": 1, "e": 1, "c": 2}
    assert d["d"] == {"c": 1, "b": 2}
    assert d["zz"] == {}


def test_graph_boost_table() -> None:
    fused = rrf({"s": [("a", 1.0), ("b", 0.9), ("c", 0.8), ("d", 0.7)]})
    base = {i.id: i.score for i in fused}
    # a-c direct edge, c-x-d path through x (not a candidate), b isolated
    dist = hop_distances({"a": {"c"}, "c": {"x"}, "x": {"d"}}, base, hops=3)
    out = {i.id: i for i in graph_boost(fused, dist, hops=3)}
    assert math.isclose(out["a"].score, base["a"] * (1 + 0.1 / 2))
    assert out["a"].supporting == ("c", "d")
    # c: a at 1 hop, d at 2 hops -> min 1; supporting nearest first
    assert math.isclose(out["c"].score, base["c"] * (1 + 0.1 / 2))
    assert out["c"].supporting == ("a", "d")
    # d: c at 2 hops, a at 3 hops -> boost 0.1/3
    assert math.isclose(out["d"].score, base["d"] * (1 + 0.1 / 3))
    assert out["d"].supporting == ("c", "a")
    assert out["b"].score == base["b"] and out["b"].supporting == ()
    # with hops=1 only the direct edge counts
    one = {i.id: i for i in graph_boost(fused, hop_distances({"a": {"c"}, "c": {"x"},
                                                              "x": {"d"}}, base, 1), hops=1)}
    assert one["d"].supporting == () and one["a"].supporting == ("c",)
    assert graph_boost(fused, dist, hops=0) == fused


def test_graph_boost_can_reorder() -> None:
    # 1/61 x 1.05 and 1/62 x 1.05 both pass 1/60: the linked pair overtakes the top hit
    fused = rrf({"s": [("a", 1), ("b", 1), ("c", 1)]})
    out = graph_boost(fused, hop_distances({"b": {"c"}}, ["a", "b", "c"], 1), hops=1)
    assert [i.id for i in out] == ["b", "c", "a"]
    assert [i.supporting for i in out] == [("c",), ("b",), ()]


# --- boosted: a query cue re-ranks by RRF of the order and the cued sub-list -----------------

F, T = False, True


@pytest.mark.parametrize(
    ("inside", "weight", "want"),
    [
        # c: 1/62 + 1/60, e: 1/64 + 1/61, then the rest in order
        ([F, F, T, F, T], 1.0, "ceabd"),
        # c: 1/62 + .03/60 = .016629 < a (.016667); e: 1/64 + .03/61 = .016117 > d (.015873)
        ([F, F, T, F, T], 0.03, "acbed"),
        ([F, F, T, F, T], 0.01, "abcde"),  # too light to pass anyone
        ([F, F, F, F, T], 1.0, "eabcd"),
        ([T, F, F, F, F], 5.0, "abcde"),  # the top hit alone: nothing to lift
        # d: 1/63 + .05/62 = .0166795 just passes a (.0166667); e: 1/64 + .05/63 does not
        ([F, T, T, T, T], 0.05, "bcdae"),
        ([F, T, T, T, T], 0.5, "bcdea"),
        # the third cued hit counts its place in the cue (k + 2): d = 1/63 + .0488/62 < a;
        # at k + 1 it would pass a
        ([F, T, T, T, T], 0.0488, "bcade"),
        # the tipping weight for a cued second hit is 1/(k+1): 1/61 at k = 60
        ([F, T], 0.0163, "ab"),
        ([F, T], 0.0165, "ba"),
        ([F, F, T], 0.0, "abc"),
        ([T, T, T], 9.0, "abc"),
        ([T, T, T], -2.0, "abc"),  # all cued: returned as given, whatever the weight
        ([F, F, F], 9.0, "abc"),
        ([], 1.0, ""),
    ],
)
def test_boosted_orders_at_the_default_k(inside: list[bool], weight: float, want: str) -> None:
    items = list("abcde"[: len(inside)])
    assert "".join(boosted(items, inside, weight)) == want
    assert "".join(boosted(items, inside, weight, DEFAULT_RRF_K)) == want


def test_boosted_at_another_k_and_never_aliases_its_input() -> None:
    # k = 1: a = 1, b = 1/2 + .6/1 = 1.1, c = 1/3 + .6/2 = .633
    assert boosted(list("abc"), [F, T, T], 0.6, k=1) == list("bac")
    items = list("ab")
    out = boosted(items, [F, F], 1.0)
    assert out == items and out is not items
    assert DEFAULT_RRF_K == 60


def test_checked_weight_refuses_what_cannot_weigh() -> None:
    assert checked_weight(0, "w") == 0.0 and isinstance(checked_weight(2, "w"), float)
    assert checked_weight(0.25, "w") == 0.25
    for bad in (-0.5, -1e-9, float("nan"), float("inf"), True, "1", None):
        with pytest.raises(InvalidRequest) as exc:
            checked_weight(bad, "time_boost")  # type: ignore[arg-type]
        assert exc.value.message == f"time_boost must be a finite number >= 0, got {bad!r}"


def test_weighted_refuses_negative_and_infinite_weights_naming_the_list() -> None:
    lists = {"a": A, "b": B}
    for bad in (-0.5, -1e-12, -2.0, float("inf"), float("-inf")):
        with pytest.raises(ValueError, match="weight of 'a' must be finite and non-negative"):
            weighted(lists, {"a": bad})
    muted = weighted(lists, {"a": 0.0, "b": 1.0})
    assert scores(muted)[:2] == [("y", 0.625), ("w", 0.5)]
    assert {i.id: i.score for i in muted}["x"] == 0.0


def test_trust_scales_each_list_in_every_mode() -> None:
    lists = {"a": [("x", 0.5)], "b": [("y", 0.5)]}
    assert scores(fuse(lists, "max", trust={"b": 0.5})) == [("x", 0.5), ("y", 0.25)]
    assert scores(fuse(lists, "weighted", trust={"a": 0.5}, weights={"b": 2.0})) == [
        ("y", 1.0), ("x", 0.25)]
    assert scores(fuse(lists, "rrf", trust={"a": 0.5})) == [("y", 1 / 60), ("x", 0.5 / 60)]
    assert scores(rrf(lists, trust={"a": 2.0}, k=2)) == [("x", 1.0), ("y", 0.5)]
    assert scores(fuse(lists, "rrf", rrf_k=4)) == [("x", 0.25), ("y", 0.25)]
    assert scores(fuse(lists, "max", trust={})) == scores(max_fusion(lists))
    with pytest.raises(ValueError, match="unknown fusion mode 'borda'"):
        fuse(lists, "borda", trust={"a": 1.0})


def test_fuse_accepts_the_wire_enum_and_a_quorum() -> None:
    from memorywire.wire.models import Fusion

    lists = {"a": A, "b": B}
    assert scores(fuse(lists, Fusion.MAX)) == scores(max_fusion(lists))
    assert [i.id for i in fuse(lists, "weighted", quorum=2)] == ["y"]
    assert [i.id for i in fuse(lists, "max", quorum=2)] == ["y"]
    with pytest.raises(ValueError) as quorum:
        max_fusion(lists, quorum=0)
    assert str(quorum.value) == "quorum must be at least 1"
    with pytest.raises(ValueError) as k:
        rrf(lists, k=0)
    assert str(k.value) == "rrf k must be at least 1 (rank 0 would divide by zero)"
    assert rrf(lists, k=1)[0].score == 1.5
    assert scores(fuse(lists)) == scores(rrf(lists))  # rrf is the default mode
    assert [i.id for i in fuse(lists, "rrf", quorum=2)] == ["y"]


def test_fused_items_report_every_list_and_the_best_one() -> None:
    got = {i.id: i for i in max_fusion({"a": [("x", 0.2), ("y", 0.9)], "b": [("y", 0.1)]})}
    assert got["y"].stores == ("a", "b") and got["y"].score == 0.9
    assert (got["y"].best_store, got["y"].best_rank) == ("b", 0)
    assert got["x"].supporting == ()
    tie = {i.id: i for i in max_fusion({"a": [("x", 0.2)], "b": [("x", 0.7)]})}
    assert (tie["x"].best_store, tie["x"].best_rank) == ("b", 0)
    first = {i.id: i for i in max_fusion({"a": [("x", 0.7)], "b": [("x", 0.7)]})}
    assert first["x"].best_store == "a"
    worse = {i.id: i for i in max_fusion({"a": [("q", 1.0), ("x", 0.9)], "b": [("x", 0.1),
                                                                            ("r", 0.0)]})}
    assert (worse["x"].best_store, worse["x"].best_rank) == ("b", 0)
    later = {i.id: i for i in max_fusion({"a": [("x", 0.1)], "b": [("q", 1.0), ("x", 0.9)]})}
    assert (later["x"].best_store, later["x"].best_rank) == ("a", 0)


def test_hop_distances_skip_self_loops_and_stop_at_hops() -> None:
    d = hop_distances({"a": ["a", "b"], "b": ["c"]}, ["a"], hops=1)
    assert d == {"a": {"b": 1}}
    assert hop_distances({"a": ["b"]}, ["a"], hops=0) == {"a": {}}
    assert hop_distances({"a": ["b"], "b": ["c"], "c": ["d"]}, ["a"], hops=3)["a"] == {
        "b": 1, "c": 2, "d": 3}
    assert hop_distances({"a": ["b", "c"], "b": ["c"]}, ["a"], hops=5)["a"] == {"b": 1, "c": 1}


def test_graph_boost_ignores_itself_far_and_non_candidate_neighbours() -> None:
    fused = rrf({"s": [("a", 1.0), ("b", 0.5)]})
    base = {i.id: i.score for i in fused}
    far = graph_boost(fused, {"a": {"a": 1, "b": 3, "zz": 1}}, hops=2)
    assert {i.id: i.score for i in far} == base
    near = {i.id: i for i in graph_boost(fused, {"b": {"a": 2}}, hops=2, factor=0.5)}
    assert near["b"].score == base["b"] * (1 + 0.5 / 3) and near["b"].supporting == ("a",)
    zero = {i.id: i for i in graph_boost(fused, {"b": {"a": 0}}, hops=2)}
    assert zero["b"].score == base["b"] and zero["b"].supporting == ()
    assert graph_boost(fused, {"b": {"a": 1}}, hops=-1) == fused
    unsorted = list(reversed(fused))  # hops 0 returns its input as given, not re-sorted
    assert graph_boost(unsorted, {"b": {"a": 1}}, hops=0) == unsorted
    tied = graph_boost(fused, {"a": {"b": 1, "c": 1}, "b": {"a": 1}}, hops=1)
    assert [i.id for i in tied] == ["a", "b"]


# --- the adversarial benchmark ----------------------------------------------------------------


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "adversarial.py"
    spec = importlib.util.spec_from_file_location("mw_bench_adversarial", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_adversarial_benchmark_reproduces_published_numbers(bench: ModuleType) -> None:
    rows = bench.run()
    pub = {(r.fusion, r.quorum, r.K): r for r in rows if r.scenario == "published"}
    assert {K for (_, _, K) in pub} == set(range(0, 51, 5))
    for K in range(0, 51, 5):
        for fusion in ("rrf", "weighted"):
            assert (pub[fusion, 1, K].recall_at_5, pub[fusion, 1, K].leak_rate) == (1.0, 0.0)
        mx = pub["max", 1, K]
        if K == 0:
            assert (mx.recall_at_5, mx.leak_rate) == (1.0, 0.0)
        else:
            assert mx.recall_at_5 == pytest.approx(0.5, abs=0.05)
            assert mx.leak_rate == pytest.approx(0.8, abs=0.05)
    # quorum 2 with one adversary that fabricates ids: nothing leaks, in every fusion mode
    for r in rows:
        if r.scenario in ("published", "noisy") and r.quorum == 2:
            assert r.leak_rate == 0.0, r
    noisy = [r for r in rows if r.scenario == "noisy"]
    assert all(r.benign_recall_at_5 < 1.0 for r in noisy)
    # two colluding adversaries defeat quorum 2 under max
    assert any(r.leak_rate > 0.5 for r in rows
               if r.scenario == "two_adversaries" and r.quorum == 2 and r.fusion == "max")
