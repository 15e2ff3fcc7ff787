"""Reflector prompts (golden, all variants and levels) and every failure mode of the retry ladder."""

from __future__ import annotations

import asyncio

import pytest

from om_eval.om.config import ModelSettings
from om_eval.om.reflector import (
    ReflectionError,
    compression_guidance,
    reflect_observations,
    render_reflector_request,
    render_reflector_system_prompt,
)
from om_eval.om.tokens import CharRatioCounter
from tests.golden import assert_golden
from tests.om.fakes import QueueModel

SETTINGS = ModelSettings(model="test/reflector", temperature=0)
COUNTER = CharRatioCounter(1.0)  # one token per character keeps the arithmetic readable
OBSERVATIONS = "Date: Mar 1, 2025\n* 🔴 (09:00) User stated they adopted a beagle named Toby.\n  * -> vet booked"
LOOP = "* 🔴 (09:00) User stated the same thing again and again.\n" * 120


def wrap(text: str) -> str:
    return f"<observations>\n{text}\n</observations>"


def reflect(model: QueueModel, *, target: int, start_level: int = 0, observations: str = OBSERVATIONS):  # noqa: ANN201
    return asyncio.run(
        reflect_observations(model, SETTINGS, observations, target=target, start_level=start_level, counter=COUNTER)
    )


@pytest.mark.parametrize("variant", ["current", "legacy", "condensed"])
def test_system_prompt_golden_embeds_the_observer_variant(variant: str) -> None:
    prompt = render_reflector_system_prompt(variant)
    assert "<observational-memory-instruction>" in prompt and "</observational-memory-instruction>" in prompt
    assert_golden(f"reflector_{variant}_system.txt", prompt)


@pytest.mark.parametrize("level", [0, 1, 2, 3, 4])
def test_request_golden_per_compression_level(level: int) -> None:
    request = render_reflector_request(OBSERVATIONS, level)
    assert "[O1] * 🔴" in request and "[O1-N1] * -> vet booked" in request  # anchored lines
    if level:
        assert compression_guidance(level) in request
    assert_golden(f"reflector_request_level{level}.txt", request)


def test_compression_levels_escalate_and_are_bounded() -> None:
    headings = [compression_guidance(level).splitlines()[0] for level in (1, 2, 3, 4)]
    assert headings[0].startswith("COMPRESSION REQUIRED") and headings[3].startswith("EXTREME")
    assert compression_guidance(0) == ""
    with pytest.raises(ValueError, match="compression level 5 is invalid"):
        compression_guidance(5)


def test_specific_guidance_and_custom_instruction() -> None:
    request = render_reflector_request(OBSERVATIONS, 0, guidance="Keep every pet name.")
    assert "## SPECIFIC GUIDANCE\n\nKeep every pet name." in request
    assert render_reflector_system_prompt("current", "Be brief.").endswith("=== CUSTOM INSTRUCTIONS ===\n\nBe brief.")


def test_first_attempt_below_target_stops_the_ladder() -> None:
    result = reflect(QueueModel([wrap("* 🔴 Toby the beagle")]), target=50)
    assert [a.level for a in result.attempts] == [0] and result.below_target and result.productive


def test_ladder_escalates_until_below_target() -> None:
    model = QueueModel([wrap("x" * 90), wrap("x" * 70), wrap("x" * 40)])
    result = reflect(model, target=50, start_level=1)
    assert [a.level for a in result.attempts] == [1, 2, 3]
    assert result.tokens == 40 and result.level == 3
    assert compression_guidance(2) in model.requests[1][1]["content"]


def test_ladder_is_bounded_and_keeps_the_smallest_attempt() -> None:
    # mastra#15062: the last attempt is not always the best one.
    model = QueueModel([wrap("x" * 80), wrap("x" * 60), wrap("x" * 75), wrap("x" * 70)])
    result = reflect(model, target=10, start_level=0)
    assert [a.level for a in result.attempts] == [0, 1, 2, 3]  # start + 3, never more
    assert result.tokens == 60 and result.level == 1 and not result.below_target


def test_ladder_from_level_two_stops_at_four() -> None:
    result = reflect(QueueModel([wrap("x" * 80)] * 3), target=10, start_level=2)
    assert [a.level for a in result.attempts] == [2, 3, 4]


def test_degenerate_attempts_are_skipped_not_chosen() -> None:
    result = reflect(QueueModel([LOOP, wrap("x" * 30)]), target=50)
    assert [a.degenerate for a in result.attempts] == [True, False] and result.tokens == 30


def test_all_degenerate_raises_instead_of_wiping_memory() -> None:
    # mastra PR#22074: an all-degenerate ladder used to return '' and replace memory with nothing.
    with pytest.raises(ReflectionError, match="kept unchanged"):
        reflect(QueueModel([LOOP, "", LOOP, wrap("")]), target=10)


def test_larger_reflection_is_unproductive() -> None:
    result = reflect(QueueModel([wrap("y" * 500)] * 4), target=10)
    assert not result.productive and result.input_tokens == len(OBSERVATIONS)
