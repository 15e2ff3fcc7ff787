"""The benchmark seam: each benchmark's categories, loading and scoring in one object; its statistics."""

from __future__ import annotations

import asyncio
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from om_eval.bench.benchmark import benchmark_named, benchmark_of_run
from om_eval.bench.locomo import CATEGORY_NAMES, locomo_scores
from om_eval.bench.metrics import (
    OFFICIAL_TYPE_ORDER,
    category_metrics,
    metric_report,
    score_means,
    wilson_interval,
)
from om_eval.bench.pipeline import SharedBuilds
from om_eval.bench.seam import SystemBuild
from om_eval.om.config import ConfigError


def test_longmemeval_and_locomo_are_found_by_name_and_an_unknown_one_is_named() -> None:
    lme, locomo = benchmark_named("longmemeval"), benchmark_named("locomo")
    assert lme.category_keys == OFFICIAL_TYPE_ORDER and lme.abstention_row and lme.own_score is None
    assert locomo.category_keys == tuple(CATEGORY_NAMES.values()) and not locomo.abstention_row
    assert next(c.title for c in locomo.categories) == "1 multi-hop" and locomo.own_score == "F1"
    assert benchmark_named(None) is lme and benchmark_of_run({"benchmark": None}) is lme
    assert benchmark_of_run({"benchmark": "locomo"}) is locomo
    for bad in ("nope", "judge", "../x"):
        with pytest.raises(ConfigError, match="dataset.benchmark="):
            benchmark_named(bad)


def test_the_longmemeval_legend_is_the_one_reports_always_printed() -> None:
    assert benchmark_named("longmemeval").legend == (
        "Types: SS-user = single-session-user; SS-pref = single-session-preference; SS-asst = "
        "single-session-assistant; Multi-session = multi-session; Temporal = temporal-reasoning; Know-update = "
        "knowledge-update.")


@given(st.integers(0, 400), st.integers(1, 400), st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_wilson_intervals_stay_in_range_and_hold_the_estimate(successes: int, n: int, confidence: float) -> None:
    successes = min(successes, n)
    low, high = wilson_interval(successes, n, confidence)
    assert 0.0 <= low <= successes / n <= high <= 1.0
    wider = wilson_interval(successes, n, min(0.999, confidence + 0.009))
    assert wider[0] <= low + 1e-12 and wider[1] >= high - 1e-12


def test_wilson_interval_matches_the_textbook_value() -> None:
    low, high = wilson_interval(8, 10, 0.95)  # z = 1.959964: (0.4902, 0.9433)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)
    assert wilson_interval(0, 0) is None
    assert wilson_interval(0, 5)[0] == 0.0 and wilson_interval(5, 5)[1] == 1.0


def _rows(draw: list[tuple[int, bool, float]]) -> list[dict]:
    return [{"question_id": f"q{i}", "question_type": CATEGORY_NAMES[c], "label": y, "score": f,
             "is_abstention": c == 5} for i, (c, y, f) in enumerate(draw)]


@given(st.lists(st.tuples(st.integers(1, 5), st.booleans(), st.floats(0, 1)), min_size=1, max_size=60))
def test_score_means_are_locomos_aggregation(draw: list[tuple[int, bool, float]]) -> None:
    ours = score_means(_rows(draw), tuple(CATEGORY_NAMES.values()))
    upstream = locomo_scores({"category": c, "score": f} for c, _, f in draw)
    assert math.isclose(ours["overall"], upstream["overall"], abs_tol=1e-12)
    for number, mean in upstream["per_category"].items():
        assert math.isclose(ours["per_type"][CATEGORY_NAMES[number]]["mean"], mean, abs_tol=1e-12)


def test_wilson_report_keeps_the_bootstrap_for_the_task_average_and_reads_abstention_from_the_row() -> None:
    rows = _rows([(1, True, 1.0), (1, False, 0.0), (5, True, 1.0), (4, True, 0.5)])
    keys = tuple(CATEGORY_NAMES.values())
    report = metric_report(rows, n_boot=50, categories=keys, intervals="wilson")
    graded = report["graded"]
    assert graded["ci"]["per_type"]["multi-hop"] == wilson_interval(1, 2)
    assert graded["ci"]["overall"] == wilson_interval(3, 4)
    assert graded["abstention"] == {"accuracy": 1.0, "n": 1}
    assert graded["ci"]["task_averaged"] is not None and "Wilson" in report["bootstrap"]["method"]
    assert category_metrics(rows, keys)["per_type"]["temporal"] == {"accuracy": None, "n": 0}
    with pytest.raises(ValueError, match="not one of"):
        category_metrics(rows, OFFICIAL_TYPE_ORDER)


def test_shared_builds_build_once_and_hand_on_reused_copies() -> None:
    made: list[str] = []

    async def build(owner: str) -> SystemBuild:
        made.append(owner)
        await asyncio.sleep(0.01)
        return SystemBuild(memory=None, key=f"k-{owner}", reused=False)

    async def main() -> list[SystemBuild]:
        shared = SharedBuilds(keep=2)
        got = await asyncio.gather(*(shared.get(o, lambda o=o: build(o)) for o in ["a", "a", "a", "b", "b"]))
        assert shared.builds == 2
        return list(got)

    got = asyncio.run(main())
    assert made == ["a", "b"] and [g.reused for g in got] == [False, True, True, False, True]


def test_a_failed_shared_build_is_retried_by_the_next_question() -> None:
    calls = {"n": 0}

    async def flaky() -> SystemBuild:
        calls["n"] += 1
        await asyncio.sleep(0.01)
        if calls["n"] == 1:
            raise RuntimeError("observer down")
        return SystemBuild(memory=None, key="k", reused=False)

    async def main() -> list[object]:
        shared = SharedBuilds()
        return list(await asyncio.gather(shared.get("a", flaky), shared.get("a", flaky), return_exceptions=True))

    first, second = asyncio.run(main())
    assert isinstance(first, RuntimeError) and isinstance(second, SystemBuild) and not second.reused
    assert calls["n"] == 2


def test_a_shared_build_is_closed_once_when_evicted_and_no_longer_held_and_the_rest_at_the_end() -> None:
    closed: list[str] = []

    async def build(owner: str) -> SystemBuild:
        await asyncio.sleep(0.01)
        if owner == "bad":
            raise RuntimeError("observer down")
        return SystemBuild(memory=owner, key=f"k-{owner}", reused=False)

    async def main() -> None:
        shared = SharedBuilds(keep=1, close=lambda b: closed.append(b.memory))
        async with shared.holding("a", lambda: build("a")):
            async with shared.holding("b", lambda: build("b")):  # evicts a, which a question still holds
                assert closed == []
            assert closed == []  # b is the one kept
        assert closed == ["a"]  # a: evicted, and its last holder is done
        with pytest.raises(RuntimeError):
            async with shared.holding("bad", lambda: build("bad")):
                pass
        shared.close_all()  # a failed build has nothing to close
        assert closed == ["a", "b"]
        shared.close_all()
        assert closed == ["a", "b"]  # once each

    asyncio.run(main())


def test_the_house_judge_routes_another_benchmarks_categories_loaded_on_demand() -> None:
    import subprocess
    import sys

    # A fresh process that builds no LoCoMo benchmark first: the route is found by loading the bench modules.
    code = ("from om_eval.bench.judging.judge import house_template_name as h; "
            "print(h('adversarial'), h('multi-hop'), h('temporal-reasoning'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["abstention", "answer", "temporal"]


def test_after_two_failed_builds_the_other_questions_fail_at_once() -> None:
    from om_eval.bench.pipeline import SharedBuildFailed

    calls = {"n": 0}

    async def broken() -> SystemBuild:
        calls["n"] += 1
        await asyncio.sleep(0.01)
        raise RuntimeError("the same cut-off reply")

    async def main() -> list[object]:
        shared = SharedBuilds()
        return list(await asyncio.gather(*(shared.get("a", broken) for _ in range(5)), return_exceptions=True))

    results = asyncio.run(main())
    assert calls["n"] == 2  # the builder and one retry; not one replay per question
    assert all(isinstance(r, Exception) for r in results)
    later = asyncio.run(_after_failures())
    assert isinstance(later, SharedBuildFailed) and "failed to build twice" in str(later)


async def _after_failures() -> object:
    async def broken() -> SystemBuild:
        raise RuntimeError("down")

    shared = SharedBuilds()
    for _ in range(2):
        try:
            await shared.get("a", broken)
        except RuntimeError:
            pass
    try:
        await shared.get("a", broken)
    except Exception as error:
        return error
    return None
