"""Reflector prompts (golden, all variants and levels) and every failure mode of the retry ladder."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.om.config import ModelSettings
from om_eval.om.observer import observer_output_format
from om_eval.om.parsing import (
    CONTINUATION_HINT_TAGS,
    ReplyReading,
    count_observation_lines,
)
from om_eval.om.reflector import (
    MIN_KEPT_SHARE,
    ReflectionError,
    compression_guidance,
    min_reflection_tokens,
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
LOOP = "* 🔴 (09:00) User stated the same thing again and again.\n" * 100


def wrap(text: str) -> str:
    return f"<observations>\n{text}\n</observations>"


def lines(chars: int) -> str:
    """One observation line of exactly ``chars`` characters (= tokens with COUNTER)."""
    return "* 🔴 " + "x" * (chars - 4)


def reflect(model: QueueModel, *, target: int, start_level: int = 0, observations: str = OBSERVATIONS):
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
    model = QueueModel([wrap(lines(90)), wrap(lines(70)), wrap(lines(40))])
    result = reflect(model, target=50, start_level=1)
    assert [a.level for a in result.attempts] == [1, 2, 3]
    assert result.tokens == 40 and result.level == 3
    assert compression_guidance(2) in model.requests[1][1]["content"]


def test_ladder_is_bounded_and_keeps_the_smallest_attempt() -> None:
    # mastra#15062: the last attempt is not always the best one.
    model = QueueModel([wrap(lines(80)), wrap(lines(60)), wrap(lines(75)), wrap(lines(70))])
    result = reflect(model, target=10, start_level=0)
    assert [a.level for a in result.attempts] == [0, 1, 2, 3]  # start + 3, never more
    assert result.tokens == 60 and result.level == 1 and not result.below_target


def test_ladder_from_level_two_stops_at_four() -> None:
    result = reflect(QueueModel([wrap(lines(80))] * 3), target=10, start_level=2)
    assert [a.level for a in result.attempts] == [2, 3, 4]


def test_degenerate_attempts_are_skipped_not_chosen() -> None:
    result = reflect(QueueModel([LOOP, wrap(lines(30))]), target=50)
    assert [a.degenerate for a in result.attempts] == [True, False] and result.tokens == 30


def test_all_degenerate_raises_instead_of_wiping_memory() -> None:
    # mastra PR#22074: an all-degenerate ladder used to return '' and replace memory with nothing.
    with pytest.raises(ReflectionError, match="kept unchanged"):
        reflect(QueueModel([LOOP, "", LOOP, wrap("")]), target=10)


def test_larger_reflection_is_unproductive() -> None:
    result = reflect(QueueModel([wrap(lines(500))] * 4), target=10)
    assert not result.productive and result.input_tokens == len(OBSERVATIONS)


# ----------------------------------------------------------------------------- junk is never a memory

#: About 4,000 tokens of observations (one token per character with COUNTER).
BIG = "Date: Mar 1, 2025\n" + "\n".join(
    f"* 🔴 (09:{i % 60:02d}) User stated detail number {i} about their beagle Toby, his vet and his diet."
    for i in range(50)
)
PROSE = "I read through the observations. The user has a dog and talks about it a lot."


def test_prose_is_a_failed_attempt_and_the_ladder_moves_on() -> None:
    result = reflect(QueueModel([PROSE, wrap(lines(30))]), target=50)
    first, second = result.attempts
    assert "not observations" in (first.problem or "") and not first.usable and not first.degenerate
    assert second.usable and result.level == 1 and result.observations == lines(30)


def test_a_reply_that_wipes_memory_to_a_line_is_never_applied() -> None:
    # Regression: a 4,001-token memory was replaced by a 16-token reply, with no error.
    assert 3500 < COUNTER.count_text(BIG) < 4500
    tiny = wrap("* 🔴 (09:00) User has a dog.")
    with pytest.raises(ReflectionError, match="below the floor") as raised:
        reflect(QueueModel([tiny] * 4), target=40_000, observations=BIG)
    assert "kept unchanged" in str(raised.value)
    floor = min_reflection_tokens(COUNTER.count_text(BIG), 40_000)
    enough = wrap(lines(floor))
    assert reflect(QueueModel([tiny, enough]), target=40_000, observations=BIG).tokens == floor


def test_input_without_markers_only_needs_the_size_floor() -> None:
    notes = "Toby is a beagle. " * 10
    result = reflect(QueueModel([wrap("Toby is the user's beagle.")]), target=100, observations=notes)
    assert result.observations == "Toby is the user's beagle." and result.productive


@given(st.integers(0, 10**7), st.integers(1, 10**7), st.integers(0, 10**6), st.integers(0, 10**6))
def test_the_floor_is_small_positive_and_monotone(input_tokens: int, target: int, more_in: int,
                                                   more_target: int) -> None:
    floor = min_reflection_tokens(input_tokens, target)
    assert floor >= 1
    assert floor <= max(1, MIN_KEPT_SHARE * min(input_tokens, target) + 1)
    assert min_reflection_tokens(input_tokens + more_in, target + more_target) >= floor


_LINE = st.sampled_from(["Date: Mar 2, 2025", "* 🔴 (10:00) User moved to Ghent.", "* -> detail", "prose text",
                         "<observations>", "</observations>", "", "* 🟡 (10:05) Agent suggested a route."])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(_LINE, st.text(max_size=40)), max_size=12))
def test_an_applied_reflection_always_looks_like_observations(reply_lines: list[str]) -> None:
    reply = "\n".join(reply_lines)
    try:
        result = reflect(QueueModel([reply] * 4), target=60)
    except ReflectionError:
        return
    assert result.observations.strip() and count_observation_lines(result.observations) >= 1
    assert result.tokens >= min_reflection_tokens(result.input_tokens, 60)


# ----------------------------------------------------------------------------- 1.10's rules (reply_checks=mastra)


def reflect_as_mastra(model: QueueModel, *, target: int, start_level: int = 0, observations: str = OBSERVATIONS):
    return asyncio.run(reflect_observations(model, SETTINGS, observations, target=target, start_level=start_level,
                                            counter=COUNTER, checks="mastra"))


def test_as_mastra_the_last_attempt_is_the_result_even_when_larger() -> None:
    model = QueueModel([wrap(lines(80)), wrap(lines(60)), wrap(lines(75)), wrap(lines(70))])
    result = reflect_as_mastra(model, target=10)
    assert [a.level for a in result.attempts] == [0, 1, 2, 3]
    assert result.tokens == 70 and result.level == 3 and result.observations == lines(70)


def test_as_mastra_prose_and_tiny_replies_are_applied() -> None:
    assert reflect_as_mastra(QueueModel([PROSE]), target=40_000, observations=BIG).observations == PROSE
    tiny = wrap("* 🔴 (09:00) User has a dog.")
    result = reflect_as_mastra(QueueModel([tiny]), target=40_000, observations=BIG)
    assert result.tokens < min_reflection_tokens(COUNTER.count_text(BIG), 40_000) and result.productive


def test_as_mastra_a_degenerate_last_attempt_leaves_nothing() -> None:
    result = reflect_as_mastra(QueueModel([wrap(lines(30)), LOOP, LOOP, LOOP]), target=10)
    assert [a.degenerate for a in result.attempts] == [False, True, True, True]
    assert result.observations == "" and result.tokens == 0 and not result.productive


def test_as_mastra_a_degenerate_attempt_climbs_and_a_good_one_stops() -> None:
    result = reflect_as_mastra(QueueModel([LOOP, wrap(lines(30))]), target=50)
    assert [a.level for a in result.attempts] == [0, 1] and result.observations == lines(30)


# ----------------------------------------------------------------------------- 1.31's rules (mastra_release=v1_31)


def test_1_12_request_shows_observations_without_anchor_ids() -> None:
    text = "\n\nDate: Mar 1, 2025\n* 🔴 (09:00) Toby\n\n\n\n* 🔴 (10:00) vet\n\n"
    anchored = render_reflector_request(text, 0)
    plain = render_reflector_request(text, 0, anchor_ids=False)
    assert "[O1]" in anchored and "[O" not in plain
    assert "Date: Mar 1, 2025\n* 🔴 (09:00) Toby\n\n* 🔴 (10:00) vet\n---" in plain.replace("\n\n---", "\n---")


def test_1_31_ladder_fails_an_empty_attempt_and_never_empties_memory() -> None:
    def as_1_31(answers: list[str]):
        return asyncio.run(reflect_observations(QueueModel(answers), SETTINGS, OBSERVATIONS, target=50, start_level=2,
                                                counter=COUNTER, checks="mastra", empty_fails=True,
                                                reading=ReplyReading("v1.31")))

    result = as_1_31([wrap(""), wrap(lines(30))])
    assert [a.problem for a in result.attempts] == ["empty reflection", None] and result.observations == lines(30)
    with pytest.raises(ReflectionError, match="kept unchanged"):
        as_1_31([wrap(""), LOOP, wrap("")])
    # 1.10 applied the empty attempt: it was under target.
    assert reflect_as_mastra(QueueModel([wrap("")]), target=50).observations == ""


def test_1_27_reflector_prompts_golden() -> None:
    """1.27+: the closing format repeats the Observer's with its hint sections; the request carries the thread's
    hints so far and the sections; a buffered call's prompts mention no hint."""
    system = render_reflector_system_prompt("current", hint_tags=CONTINUATION_HINT_TAGS)
    closing_format = system.split("=== OUTPUT FORMAT ===")[-1]
    assert observer_output_format(hint_tags=CONTINUATION_HINT_TAGS) in closing_format
    plain = render_reflector_system_prompt("current", hint_tags=())
    assert "<current-task>" not in plain and "<suggested-response>" not in plain
    request = render_reflector_request(OBSERVATIONS, 1, anchor_ids=False, hint_tags=CONTINUATION_HINT_TAGS,
                                       prior_hints={"current-task": "Book the vet"})
    assert "## Prior Extracted Values\n\n<current-task>\nBook the vet\n</current-task>" in request
    assert request.index("## Prior Extracted Values") < request.index("## Additional Output Sections")
    assert_golden("reflector_v1_31_system.txt", system)
    assert_golden("reflector_v1_31_request.txt", request)
