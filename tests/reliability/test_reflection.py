"""Case 3: a junk reflection never shrinks memory, and what a failed reflection does to the run.

The smoke experiment never reflects, so these cases lower the thresholds (``REFLECTING``) until every question
of the mini set reflects once or twice. A reflector that answers junk (prose, nothing, a loop, cut-off XML, a
400, an echo of its input) must leave every memory as it was: no reflection applied, no event claiming a
smaller memory, every paid reflector reply counted.

A failed reflection makes its question an error (retried on resume, its memory never kept for reuse). One case
is a known departure, marked ``xfail(strict=True)`` with its cause: junk at one rung of the compression ladder
moves the ladder on, which can change the memory (B3).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from om_eval.llm.providers import register_scripted
from om_eval.om.config import ModelSettings
from om_eval.om.model import ModelReply
from om_eval.om.reflector import reflect_observations
from om_eval.om.tokens import CharRatioCounter
from om_eval.testing.scripted.model import ScriptedModel
from tests.reliability.harness import (
    REFLECTING,
    Outcome,
    assert_calls_accounted,
    assert_consistent,
    assert_matches,
    assert_no_bad_reply_cached,
    invoke,
    outcome,
    read,
)

JUNK = ("prose", "empty", "degenerate", "missing_tags", "bad_request", "no_compression")


def junk_reflector(name: str, fault: str) -> ScriptedModel:
    """A reflector that never gives a usable reflection (more faults than the mini set has reflector calls)."""
    model = ScriptedModel(faults={"reflector": [fault] * 200}, history=None)
    register_scripted(name, model)
    return model


@pytest.mark.parametrize("fault", JUNK)
def test_a_junk_reflection_never_shrinks_memory(tmp_path: Path, fault: str) -> None:
    name = f"junk-reflector-{fault}"
    model = junk_reflector(name, fault)
    invoke(tmp_path, f"models.reflector.model=scripted/{name}", *REFLECTING)
    assert_consistent(tmp_path)
    assert model.call_counts["reflector"] > 0, "the thresholds should make the run reflect"
    with read(tmp_path) as db:
        events = db.query("SELECT * FROM om_events ORDER BY question_id, seq")
        snapshots = db.query("SELECT question_id, snapshot FROM memory_snapshots")
        counted = db.query("""
            SELECT i.question_id, i.reflector_calls AS counted, count(c.seq) AS replies FROM items i
            LEFT JOIN llm_calls c ON c.question_id = i.question_id AND c.stage = 'reflector'
                AND (c.error IS NULL OR c.error LIKE 'unusable reply: %')
            GROUP BY ALL""")
    assert [e for e in events if e["kind"] == "reflection"] == [], "a junk reflection was applied"
    tried = [e for e in events if e["kind"].startswith("reflection")]
    assert tried, "no reflection was attempted"
    for event in tried:  # failed, unproductive or deferred: the memory is kept, and the event says so
        assert event["observation_tokens_after"] == event["observation_tokens_before"], event
    last: dict[str, int] = {}
    for event in events:
        if event["kind"] == "observation":
            assert event["observation_tokens_after"] >= last.get(event["question_id"], 0), event
            last[event["question_id"]] = event["observation_tokens_after"]
    for row in snapshots:
        for record, generations in json.loads(row["snapshot"])["generations"].items():
            assert len(generations) == 1, f"{record} was replaced by a reflection"
            assert generations[0]["observation_token_count"] == last[row["question_id"]]
    # Every reflector reply (junk included) is in the question's statistics, as it is in llm_calls.
    assert all(row["counted"] == row["replies"] for row in counted), counted
    assert_calls_accounted(tmp_path, name, [model])
    if fault != "no_compression":  # an echo of the input is well-formed, merely useless: it may be cached
        assert_no_bad_reply_cached(tmp_path, [model])


# -- the compression ladder on its own ------------------------------------------------------------------------


@dataclass
class Replies:
    """A model that answers with ``texts`` in order."""

    texts: list[str]
    asked: list[Sequence[dict[str, str]]] = field(default_factory=list)

    async def complete(self, messages: Sequence[dict[str, str]], *, stage: str, settings: ModelSettings) -> ModelReply:
        self.asked.append(messages)
        return ModelReply(self.texts.pop(0), settings.model, prompt_tokens=10, completion_tokens=10)


MEMORY = "\n".join([
    '<thread id="a1b2">', "Date: Oct 6, 2023",
    *(f"* 🔴 (12:{m:02d}) User stated they graduated in Marine Biology from Brookhaven, fact {m}." for m in range(12)),
    "</thread>", "", '<thread id="c3d4">', "Date: Oct 21, 2023",
    *(f"* 🟡 (20:{m:02d}) User asked whether checking a blunder helps, question {m}." for m in range(12)),
    "</thread>",
])
SHORTER = "\n".join(line[:60] for line in MEMORY.splitlines())


def test_a_cut_off_or_untagged_reflection_is_never_applied() -> None:
    # Regression: a reply cut off by an output limit (its <observations> block never closes) or sent without
    # tags was parsed from its bullets alone and applied, stripping every date and thread from the memory.
    cut_off = "<observations>\n" + "\n".join(SHORTER.splitlines()[:14])
    untagged = SHORTER
    model = Replies([cut_off, untagged, f"<observations>\n{SHORTER}\n</observations>"])
    counter = CharRatioCounter(1.0)
    result = asyncio.run(reflect_observations(model, ModelSettings(model="test/reflector"), MEMORY,
                                              target=counter.count_text(SHORTER) + 10, start_level=0,
                                              counter=counter))
    first, second, third = result.attempts
    assert "no complete <observations> block" in (first.problem or "") and not first.usable
    assert "no complete <observations> block" in (second.problem or "") and not second.usable
    assert third.usable and result.level == 2
    assert result.observations.count("Date:") == 2 and result.observations.count("<thread") == 2


# -- known bugs --------------------------------------------------------------------------------------------------


def test_a_reflection_failing_in_the_final_flush_is_reported(tmp_path: Path) -> None:
    name = "final-flush-400"
    register_scripted(name, ScriptedModel(faults={"reflector": ["bad_request"]}))
    done = invoke(tmp_path, f"models.reflector.model=scripted/{name}", *REFLECTING)
    with read(tmp_path) as db:
        failed = db.query("SELECT count(*) AS n FROM om_events WHERE kind = 'reflection_failed'")[0]["n"]
    assert failed == 1
    assert done.code == 1 and "reflection failed" in done.flat


def test_rerunning_after_failed_reflections_rebuilds_the_memory(
    tmp_path: Path, reference: Callable[..., Outcome]
) -> None:
    name = "outage-reflector"
    junk_reflector(name, "prose")
    first = invoke(tmp_path, f"models.reflector.model=scripted/{name}", *REFLECTING)
    assert first.code == 1 and "reflection failed" in first.flat
    register_scripted(name, ScriptedModel())
    invoke(tmp_path, f"models.reflector.model=scripted/{name}", *REFLECTING)
    assert_matches(outcome(tmp_path), reference(*REFLECTING))


def test_a_variant_never_reuses_a_degraded_memory(tmp_path: Path) -> None:
    # A memory whose reflection failed is not kept, so a variant that shares it (another judge parse rule)
    # builds it again with the now healthy reflector instead of answering from it.
    name = "outage-reflector-shared"
    junk_reflector(name, "prose")
    first = invoke(tmp_path, f"models.reflector.model=scripted/{name}", *REFLECTING)
    assert first.code == 1
    register_scripted(name, ScriptedModel())
    variant = invoke(tmp_path, f"models.reflector.model=scripted/{name}", *REFLECTING, "judge.parse=mastra")
    with read(tmp_path) as db:
        rows = db.query("SELECT status, reused_memory FROM items WHERE run_id IN "
                        "(SELECT run_id FROM runs ORDER BY created_at DESC LIMIT 1)")
    failed_first = first.flat.count("ReflectionFailed")
    assert variant.code == 0 and all(r["status"] == "done" for r in rows)
    assert sum(not r["reused_memory"] for r in rows) >= 1 and failed_first >= 1


@pytest.mark.xfail(strict=True, reason=(
    "B3, om_eval/om/reflector.py reflect_observations(), the ladder loop: an unusable reply (prose, empty, a loop, "
    "a reply below the floor) at one rung makes the ladder climb to the next compression level instead of asking "
    "the same rung again, so one transient junk reply per rung yields a harder-compressed memory than a clean run, "
    "with no error or warning (three prose replies flip 8184464e from right to wrong, exit code 0). Kept on "
    "purpose for now: 1.10's callReflector climbs a level after a degenerate reply too (om-reference 3.5), and "
    "tests/om/test_reflector.py pins that climb; a same-level retry would be an option beside it, not a fix."))
def test_one_junk_reply_per_rung_leaves_the_memory_as_a_clean_run(
    tmp_path: Path, reference: Callable[..., Outcome]
) -> None:
    name = "flaky-reflector"
    register_scripted(name, ScriptedModel(faults={"reflector": ["prose"] * 3}))
    done = invoke(tmp_path, f"models.reflector.model=scripted/{name}", *REFLECTING)
    found = outcome(tmp_path)
    clean = reference(*REFLECTING)
    silently_changed = [q for q, v in found.items() if v[0] == "done" and v != clean[q]]
    assert not silently_changed or done.code == 1
