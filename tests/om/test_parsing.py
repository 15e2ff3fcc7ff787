"""Tests for om_eval.om.parsing (reference §2.5–§2.7 Observer parsing, §3.6 Reflector parsing)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from om_eval.om import parsing
from om_eval.om.parsing import (
    CONTINUATION_HINT_TAGS,
    MAX_OBSERVATION_LINE_CHARS,
    MultiThreadOutput,
    ObserverOutput,
    ReflectorOutput,
    count_observation_lines,
    detect_degenerate,
    extract_list_items,
    extracted_hints,
    has_observation_lines,
    is_degenerate,
    is_degenerate_strict,
    parse_multi_thread_output,
    parse_observer_output,
    parse_reflector_output,
    sanitize_lines,
    strip_hint_sections,
)
from om_eval.om.reply_lines import is_degenerate_v1_31

CANONICAL = """<observations>
Date: Dec 4, 2025
* 🔴 (14:30) User keeps sourdough starter in the fridge
  * -> because the kitchen runs warm in summer
* 🟡 (14:32) User may switch to rye flour

Date: Dec 5, 2025
* 🔴 (09:15) Baked the weekend loaves for the market stall
</observations>

<current-task>
Primary: scale the loaf recipe to twelve
</current-task>

<suggested-response>
Here is the scaled recipe — shall I convert it to grams?
</suggested-response>
<thread-title>Scaling the loaf recipe</thread-title>
"""

# --------------------------------------------------------------------------- sanitize_lines


def test_sanitize_cuts_long_lines_only() -> None:
    long_line = "x" * (MAX_OBSERVATION_LINE_CHARS + 5)
    exact = "y" * MAX_OBSERVATION_LINE_CHARS
    result = sanitize_lines(f"short\n{long_line}\n{exact}")
    assert result.split("\n") == ["short", "x" * MAX_OBSERVATION_LINE_CHARS + " … [truncated]", exact]


def test_sanitize_counts_utf16_code_units() -> None:
    # As in JS, an emoji outside the BMP is two units: 9 999 "x" + 🔴 is 10 001 units, over the limit.
    over = "x" * 9_998 + "🔴🔴"
    assert sanitize_lines(over) == "x" * 9_998 + "🔴 … [truncated]"
    assert sanitize_lines("x" * 9_998 + "🔴") == "x" * 9_998 + "🔴"


def test_sanitize_never_splits_a_surrogate_pair() -> None:
    # Documented departure: 1.10 would keep the first half of the last 🔴 (a lone surrogate).
    assert sanitize_lines("x" * 9_999 + "🔴🔴") == "x" * 9_999 + " … [truncated]"


def test_sanitize_leaves_short_text_untouched() -> None:
    assert sanitize_lines("") == ""
    assert sanitize_lines("a\n\n  b") == "a\n\n  b"


@given(st.text())
def test_sanitized_lines_are_bounded(text: str) -> None:
    limit = MAX_OBSERVATION_LINE_CHARS + len(" … [truncated]")
    assert all(len(line) <= limit for line in sanitize_lines(text).split("\n"))


# --------------------------------------------------------------------------- Observer


def test_canonical_observer_output() -> None:
    result = parse_observer_output(CANONICAL)
    assert result == ObserverOutput(
        observations=(
            "Date: Dec 4, 2025\n"
            "* 🔴 (14:30) User keeps sourdough starter in the fridge\n"
            "  * -> because the kitchen runs warm in summer\n"
            "* 🟡 (14:32) User may switch to rye flour\n"
            "\n"
            "Date: Dec 5, 2025\n"
            "* 🔴 (09:15) Baked the weekend loaves for the market stall"
        ),
        current_task="Primary: scale the loaf recipe to twelve",
        suggested_response="Here is the scaled recipe — shall I convert it to grams?",
        thread_title="Scaling the loaf recipe",
    )


def test_inline_mentions_of_tags_are_not_matched() -> None:
    text = (
        "The user discussed <observations> tags and </observations> in prose.\n"
        "<observations>\n* 🔴 real item\n</observations>"
    )
    assert parse_observer_output(text).observations == "* 🔴 real item"


def test_closing_tag_must_start_a_line() -> None:
    text = "<observations>\n* a </observations>\n* b\n  </observations>"
    assert parse_observer_output(text).observations == "* a </observations>\n* b"


def test_indented_tags_are_accepted() -> None:
    text = "  <observations>\n* a\n\t</observations>"
    assert parse_observer_output(text).observations == "* a"


def test_multiple_blocks_are_joined_and_empty_ones_dropped() -> None:
    text = (
        "<observations>\n* a\n</observations>\nprose\n"
        "<observations>\n</observations>\n<observations>\n* b\n</observations>"
    )
    assert parse_observer_output(text).observations == "* a\n* b"


def test_tags_are_case_insensitive() -> None:
    assert parse_observer_output("<OBSERVATIONS>\n* a\n</Observations>").observations == "* a"


def test_nested_indentation_is_preserved() -> None:
    text = "<observations>\n* top\n  * -> nested\n    * -> deeper\n\t* -> tabbed\n</observations>"
    assert parse_observer_output(text).observations == "* top\n  * -> nested\n    * -> deeper\n\t* -> tabbed"


def test_missing_tags_keep_only_list_lines() -> None:
    text = "Here are my notes:\n- first\n  * nested\n12. numbered\n-not a list\n*also not\nClosing prose."
    result = parse_observer_output(text)
    assert result.observations == "- first\n  * nested\n12. numbered"
    assert extract_list_items(text) == result.observations


def test_prose_only_output_gives_empty_observations() -> None:
    result = parse_observer_output("I could not find anything worth noting in this conversation.")
    assert result == ObserverOutput(observations="")


def test_empty_output() -> None:
    assert parse_observer_output("") == ObserverOutput(observations="")
    assert parse_observer_output("   \n\n") == ObserverOutput(observations="")


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_crlf_and_cr_line_endings_are_kept(newline: str) -> None:
    # 1.10 does not normalise line breaks: tags still start a line after a CR, and the observations keep the CRs.
    parsed = parse_observer_output(CANONICAL.replace("\n", newline))
    expected = parse_observer_output(CANONICAL)
    assert parsed == replace(expected, observations=expected.observations.replace("\n", newline))


def test_crlf_list_fallback_keeps_cr_and_lone_cr_joins_lines() -> None:
    assert parse_observer_output("Notes\r\n- a\r\n- b\r\n").observations == "- a\r\n- b"
    # Lines are split on LF only, so "- a\r- b" is one list line.
    assert parse_observer_output("- a\r- b\rprose").observations == "- a\r- b\rprose"


def test_observations_are_trimmed_with_js_whitespace() -> None:
    text = "<observations>\n\ufeff* a\x1c\n</observations>"
    assert parse_observer_output(text).observations == "* a\x1c"


def test_current_task_and_suggested_response_need_line_start_tags() -> None:
    text = (
        "<observations>\n* a\n</observations>\n"
        "I will mention <current-task>not this</current-task> inline.\n"
        "<current-task>\n  first task  \n</current-task>\n"
        "<current-task>\nsecond\n</current-task>\n"
        "<suggested-response>one line</suggested-response>\n"
    )
    result = parse_observer_output(text)
    assert result.current_task == "first task"
    assert result.suggested_response is None  # the closing tag does not start a line


def test_empty_metadata_tags_give_none() -> None:
    text = "<observations>\n* a\n</observations>\n<current-task>\n   \n</current-task>\n<thread-title></thread-title>"
    result = parse_observer_output(text)
    assert result.current_task is None
    assert result.thread_title is None


def test_thread_title_closing_tag_may_share_the_line() -> None:
    titled = parse_observer_output("* a\n  <thread-title> Rye starter care </thread-title>")
    assert titled.thread_title == "Rye starter care"
    assert parse_observer_output("* a\nTitle: <thread-title>No</thread-title>").thread_title is None
    assert parse_observer_output("* a\n<thread-title>\nMulti line\n</thread-title>").thread_title == "Multi line"


def test_observer_output_lines_are_sanitised() -> None:
    long_item = "* " + " ".join(f"w{i}" for i in range(2_500))
    result = parse_observer_output(f"<observations>\n{long_item}\n* short\n</observations>")
    first, second = result.observations.split("\n")
    assert first.endswith(" … [truncated]")
    assert len(first) == MAX_OBSERVATION_LINE_CHARS + len(" … [truncated]")
    assert second == "* short"


def test_degenerate_observer_output() -> None:
    loop = "<observations>\n" + "* 🟡 The helper re-ran one command over and over\n" * 200 + "</observations>"
    assert parse_observer_output(loop) == ObserverOutput(observations="", degenerate=True)


# --------------------------------------------------------------------------- multi-thread


MULTI = """<observations>
<thread id="thread1">
Date: Dec 4, 2025
* 🔴 (14:30) User keeps sourdough starter in the fridge
<current-task>Pricing the market loaves</current-task>
<suggested-response>Offer the price sheet next</suggested-response>
<thread-title>Market stall pricing</thread-title>
</thread>
<thread id="thread2">
Date: Dec 5, 2025
* 🔴 (09:15) User asked how to ship bread by post
  * -> nested detail
<current-task>Comparing courier options</current-task>
</thread>
</observations>
<thread id="outside">* ignored, outside the first observations block</thread>
"""


def test_multi_thread_canonical() -> None:
    result = parse_multi_thread_output(MULTI)
    assert not result.degenerate
    assert list(result.threads) == ["thread1", "thread2"]
    assert result.threads["thread1"] == ObserverOutput(
        observations="Date: Dec 4, 2025\n* 🔴 (14:30) User keeps sourdough starter in the fridge",
        current_task="Pricing the market loaves",
        suggested_response="Offer the price sheet next",
        thread_title="Market stall pricing",
    )
    assert result.threads["thread2"] == ObserverOutput(
        observations="Date: Dec 5, 2025\n* 🔴 (09:15) User asked how to ship bread by post\n  * -> nested detail",
        current_task="Comparing courier options",
    )


def test_multi_thread_without_observations_block_uses_whole_output() -> None:
    text = 'Notes:\n<thread id="a">\n* x\n</thread>\n<THREAD id="b">* y</THREAD>'
    result = parse_multi_thread_output(text)
    assert {key: value.observations for key, value in result.threads.items()} == {"a": "* x", "b": "* y"}


def test_multi_thread_skips_empty_blocks_and_keeps_last_duplicate() -> None:
    text = '<thread id="a"></thread><thread id="b">* first</thread><thread id="b">* second</thread>'
    assert {key: value.observations for key, value in parse_multi_thread_output(text).threads.items()} == {
        "b": "* second"
    }


def test_multi_thread_removes_only_first_metadata_tag_and_empty_tags() -> None:
    text = (
        '<thread id="a">\n* x\n<current-task></current-task>\n'
        "<suggested-response>one</suggested-response>\n<suggested-response>two</suggested-response>\n</thread>"
    )
    thread = parse_multi_thread_output(text).threads["a"]
    assert thread.current_task is None
    assert thread.suggested_response == "one"
    # As in 1.10, an empty tag is not removed from the observations.
    assert thread.observations == "* x\n<current-task></current-task>\n\n<suggested-response>two</suggested-response>"


def test_multi_thread_no_threads_and_crlf() -> None:
    assert parse_multi_thread_output("just prose") == MultiThreadOutput(threads={})
    crlf = parse_multi_thread_output(MULTI.replace("\n", "\r\n"))
    plain = parse_multi_thread_output(MULTI)
    assert list(crlf.threads) == list(plain.threads)
    for thread_id, thread in plain.threads.items():
        assert crlf.threads[thread_id] == replace(thread, observations=thread.observations.replace("\n", "\r\n"))


def test_multi_thread_degenerate() -> None:
    loop = '<observations>\n<thread id="a">\n' + "* the same looping observation line\n" * 200 + "</thread>\n"
    assert parse_multi_thread_output(loop) == MultiThreadOutput(threads={}, degenerate=True)


# --------------------------------------------------------------------------- Reflector


def test_reflector_blocks_strip_anchors_and_ignore_current_task() -> None:
    text = (
        "<observations>\n[O1] * 🔴 (10:00) Fact one\n  [O1-N1] * -> detail\n</observations>\n"
        "<current-task>ignored</current-task>\n"
        "Text with <suggested-response>inline hint</suggested-response> is fine for the reflector."
    )
    assert parse_reflector_output(text) == ReflectorOutput(
        observations="* 🔴 (10:00) Fact one\n  * -> detail", suggested_response="inline hint"
    )


def test_reflector_falls_back_to_list_items_then_whole_text() -> None:
    assert parse_reflector_output("Summary:\n- a\n  - b\nDone.").observations == "- a\n  - b"
    prose = "  The user bakes for a café in Leeds.\nShe prefers spelt.  \n"
    assert parse_reflector_output(prose) == ReflectorOutput(
        observations="The user bakes for a café in Leeds.\nShe prefers spelt."
    )


def test_reflector_inline_mentions_and_empty_output() -> None:
    text = "I will put the <observations> here:\n* kept as a list line"
    assert parse_reflector_output(text).observations == "* kept as a list line"
    assert parse_reflector_output("") == ReflectorOutput(observations="")


def test_reflector_empty_blocks_do_not_fall_back() -> None:
    assert parse_reflector_output("<observations>\n</observations>\n- stray").observations == ""


def test_reflector_crlf_and_sanitising() -> None:
    long_line = "* " + "".join(format(i, "x").rjust(5, "0") for i in range(2_100))
    text = f"<observations>\r\n[O1] * a\r\n{long_line}\r\n</observations>\r\n"
    lines = parse_reflector_output(text).observations.split("\n")
    assert lines[0] == "* a\r"  # line breaks are kept as written
    assert lines[1].endswith(" … [truncated]")


def test_reflector_output_is_not_trimmed_after_stripping_anchors() -> None:
    assert parse_reflector_output("<observations>\n[O1]\n* a\n</observations>").observations == "\n* a"


def test_reflector_degenerate() -> None:
    loop = "<observations>\n" + "* 🟡 The reflector repeated this same line forever\n" * 200
    assert parse_reflector_output(loop) == ReflectorOutput(observations="", degenerate=True)


# --------------------------------------------------------------------------- degenerate detection, v1.10

#: A long line the way a faithful summary of a long log might look (over 50,000 characters, varied words).
GIANT_LINE = "- 🟡 Oven log: " + " ".join(f"t{i}={180 + i % 40}C" for i in range(9_000))
#: A short tool-result line a summary of a repetitive bake might repeat.
PROOF_LINE = "  * -> proof dough → ok"


def test_v110_short_text_is_never_degenerate() -> None:
    assert not is_degenerate("ab" * 999)
    assert is_degenerate("ab" * 1000)  # 2000 chars of a 2-char period: every window repeats


def test_v110_varied_text_is_fine() -> None:
    text = "\n".join(f"* 🔴 ({i % 24:02d}:00) User fact number {i} about topic {i * 7919}" for i in range(200))
    assert not is_degenerate(text)


def test_v110_windows_are_utf16_code_units() -> None:
    # 100 copies of a 57-unit line: the step (114 units) is two copies, so every window repeats and JS flags it.
    # 120 copies: the step (136 units) drifts through the copy, the windows differ and 1.10 does not flag it,
    # although the same text counted in code points would have been flagged.
    line = "* 🔴 (09:00) User stated the same thing again and again.\n"
    assert is_degenerate(line * 100)
    assert not is_degenerate(line * 120)


def test_v110_single_giant_line_is_degenerate() -> None:
    giant = GIANT_LINE
    assert len(giant) > 50_000
    assert is_degenerate(giant)
    assert parse_observer_output(f"<observations>\n{giant}\n</observations>").degenerate


def test_v110_faithful_repetitive_tool_summary_is_flagged() -> None:
    # The quirk HEAD fixed: a bounded run of identical short tool lines trips the window sampler.
    text = "- 🔴 Baker asked for the dough to be proofed\n" + "\n".join([PROOF_LINE] * 180) + "\n- 🟡 Proofing done"
    assert is_degenerate(text)
    assert not is_degenerate_strict(text)


def test_detect_degenerate_dispatch() -> None:
    text = "ab" * 1000
    assert detect_degenerate(text) is is_degenerate(text)
    assert detect_degenerate(text, "head") is is_degenerate_strict(text)
    assert detect_degenerate(text, "v1.31") is is_degenerate_v1_31(text)
    with pytest.raises(ValueError):
        detect_degenerate(text, "v9")  # type: ignore[arg-type]  # an unknown rule on purpose


# --------------------------------------------------------------------------- degenerate detection, HEAD



def _wrap(body: str) -> str:
    return f"<observations>\n{body}\n</observations>"


def _alternating(n: int) -> str:
    return "\n".join(PROOF_LINE if i % 2 == 0 else "  * -> knead rye → fine" for i in range(n))


def test_head_giant_line_is_cut_not_flagged() -> None:
    result = parse_observer_output(_wrap(GIANT_LINE), degenerate_strategy="head")
    assert not result.degenerate
    assert "Oven log" in result.observations
    assert result.observations.endswith("[truncated]")
    assert len(result.observations) < 11_000
    multi = f'<observations>\n<thread id="t1">\n{GIANT_LINE}\n</thread>\n</observations>'
    threads = parse_multi_thread_output(multi, degenerate_strategy="head").threads
    assert threads["t1"].observations.endswith("[truncated]")
    assert not parse_reflector_output(_wrap(GIANT_LINE), degenerate_strategy="head").degenerate


@pytest.mark.parametrize("n", range(104, 330, 9))
def test_head_alternating_short_tool_lines_are_fine(n: int) -> None:
    body = f"- 🔴 Baker proofed and kneaded in turns\n{_alternating(n)}\n- 🟡 Every tray came out fine"
    assert not is_degenerate_strict(_wrap(body))


@pytest.mark.parametrize("n", [25, 70, 120, 160])
def test_head_bounded_run_of_long_tool_lines_is_fine(n: int) -> None:
    tool_line = "  * -> weigh --tray north-oven/rack-3 --flour spelt → 2.4 kg"
    body = "- 🔴 Baker weighed every tray\n" + "\n".join([tool_line] * n) + "\n- 🟡 All trays within tolerance"
    assert not is_degenerate_strict(_wrap(body))


def test_head_flags_non_consecutive_multi_line_loop() -> None:
    block = "\n".join(f"- 🟡 Reminder {i}: the rye order for the café is still the same as before" for i in range(6))
    assert is_degenerate_strict(_wrap("\n".join([block] * 18)))


def test_head_flags_one_long_line_repeated_back_to_back() -> None:
    line = "- 🟢 The baker opened the proofing drawer once more and found the dough exactly as it was"
    assert is_degenerate_strict(_wrap("\n".join([line] * 250)))


def test_head_duplicate_line_minimum_for_sanitised_giant_repeats() -> None:
    body = "".join(format(i, "x").rjust(5, "0") for i in range(12_000))
    giant = f"- 🟡 Progress: {body}"
    assert not is_degenerate_strict(_wrap("\n".join([giant] * 19)))
    assert is_degenerate_strict(_wrap("\n".join([giant] * 20)))


def test_head_periodic_giant_line_with_surroundings_is_fine() -> None:
    periodic = "====>" * 12_000
    detail = "".join(format(i, "x").rjust(5, "0") for i in range(600))
    for size in range(0, 3001, 125):
        text = _wrap(f"- 🔴 Style check {detail[:size]}\n- 🟡 Fetch trace: {periodic}\n- 🟢 Checks: 41 green.")
        assert not is_degenerate_strict(text), size


def test_head_short_line_loop() -> None:
    assert is_degenerate_strict("\n".join([PROOF_LINE] * 1000))
    assert not is_degenerate_strict("ok" + " " * 10_050)
    assert not is_degenerate_strict("\n".join(["* Proofed the morning batch", *[PROOF_LINE] * 200]))


def test_head_many_distinct_short_lines_share_one_budget() -> None:
    short_lines = [f"  * step {i} → ok" for i in range(14)]
    first, last = "- 🔴 The oven timer printed many tiny status notes", "- 🟡 The timer never finished"
    body = "\n".join([first, *short_lines * 400, last])
    assert is_degenerate_strict(_wrap(body))


def test_head_short_line_aggregate_boundary() -> None:
    eight, nine = "* abcdef", "* abcdefg"
    at_budget = [*[eight] * 554, nine, *[eight] * 555, nine]  # joined repeated lines: exactly 10 000 chars
    above = [*[eight] * 554, nine, *[eight] * 554, nine, nine]  # 10 001 chars
    assert not is_degenerate_strict(_wrap("\n".join(at_budget)))
    assert is_degenerate_strict(_wrap("\n".join(above)))


def test_head_short_line_runs_reset_at_long_lines() -> None:
    run = "\n".join(["* tray cooled ok"] * 400)  # 400 * 17 - 1 = 6 799 chars per run
    separator = "- 🟡 A lengthy divider sentence between two runs"
    assert not is_degenerate_strict(f"{run}\n{separator}\n{run}")
    assert is_degenerate_strict(f"{run}\n{run}")  # one run of 800: too long to collapse, and over budget


def test_head_short_text_is_never_degenerate() -> None:
    run = ["a sizeable recurring remark about the garden"] * 10
    text = "\n".join([*run, "a separate sizeable remark about the garden", *run])
    assert len(text) < 2000
    assert not is_degenerate_strict(text)


def test_observation_lines_are_marker_lines_in_the_observer_format() -> None:
    text = ("Date: Mar 3, 2026\n* 🔴 (09:12) User runs a bakery.\n  * -> read costs.xlsx\n"
            "- 🟡 (09:20) Agent helped.\n🟢 (09:30) Minor point.\n1. ✅ (09:40) Price fixed.\n<observations>\n"
            "The user said 🔴 twice.\n")
    assert count_observation_lines(text) == 4
    assert count_observation_lines("I looked at the conversation; nothing to report.") == 0
    assert count_observation_lines("Date: Mar 3, 2026\n* -> a step") == 0


_marker_lines = st.lists(st.one_of(
    st.sampled_from(["* 🔴 (09:12) a", "  - 🟡 b", "1. ✅ c", "x 🔴 d", "* -> e", "Date: Mar 3", "\t🟢", "", " 🔴"]),
    st.text(max_size=12)), max_size=8).map("\n".join)


@given(_marker_lines)
def test_whether_text_has_observation_lines_agrees_with_their_count(text: str) -> None:
    assert has_observation_lines(text) == (count_observation_lines(text) > 0)
    assert count_observation_lines(text) == sum(1 for _ in parsing._OBSERVATION_LINE.finditer(text))


@given(st.text(alphabet=st.characters(blacklist_characters="🔴🟡🟢✅"), max_size=300))
def test_text_without_markers_has_no_observation_lines(text: str) -> None:
    assert count_observation_lines(text) == 0


# --------------------------------------------------------------------------- degenerate detection, 1.28-1.31


def _block_loop(lines: int, distinct: int) -> str:
    """``lines`` observation lines cycling through ``distinct`` different ones, each 60+ characters: a long-period
    loop whose sampled windows rarely collide."""
    rows = [f"* 🔴 (09:{i:02d}) User described step {i} of the long migration plan in detail." for i in range(distinct)]
    return "\n".join(rows[i % distinct] for i in range(lines))


def test_v131_catches_a_long_period_loop_that_the_windows_miss() -> None:
    text = _block_loop(63, 21)  # a 21-line block three times: 42 of 63 lines repeat
    assert len(text) > 2000 and not is_degenerate(text) and is_degenerate_v1_31(text)


@pytest.mark.parametrize(("lines", "distinct", "degenerate"), [
    (40, 20, False),  # exactly half repeat: not more than half
    (41, 20, True),
    (60, 60, False),  # no repeats
])
def test_v131_repeated_line_share(lines: int, distinct: int, degenerate: bool) -> None:
    assert is_degenerate_v1_31(_block_loop(lines, distinct)) is degenerate


def test_v131_counts_only_lines_of_24_characters_or_more_and_needs_twenty() -> None:
    def loop(width: int) -> str:  # 50 different lines of ``width`` characters, three times over
        rows = [f"- note {i:03d} ".ljust(width, "x") for i in range(50)]
        return "\n".join(rows[i % 50] for i in range(150))

    assert not is_degenerate(loop(24)) and not is_degenerate(loop(23))  # the windows never collide
    assert is_degenerate_v1_31(loop(24)) and not is_degenerate_v1_31(loop(23))
    def one_line_repeated(times: int) -> str:  # plus 300 short distinct lines, which are not counted
        return _block_loop(times, 1) + "\n" + "\n".join(f"n{i}" for i in range(300))

    assert not is_degenerate_v1_31(one_line_repeated(19))  # 19 counted lines: too few to judge
    assert is_degenerate_v1_31(one_line_repeated(20)) and not is_degenerate(one_line_repeated(20))


# --------------------------------------------------------------------------- 1.27+ hint sections

HINTED = """<observations>
Date: Dec 4, 2025
* 🔴 (14:30) User asked about <suggested-response>inline</suggested-response>
* 🔴 (14:31) User booked the vet
</observations>
<current-task>
Primary: first
</current-task>
<current-task>
Primary: last
</current-task>
"""


def test_hint_sections_take_the_last_match_and_leave_the_observations() -> None:
    old = parse_observer_output(HINTED)
    new = parse_observer_output(HINTED, hint_tags=CONTINUATION_HINT_TAGS)
    assert (old.current_task, old.suggested_response) == ("Primary: first", None)
    assert "<suggested-response>inline</suggested-response>" in old.observations
    assert (new.current_task, new.suggested_response) == ("Primary: last", "inline")
    # The inline section goes with the spaces before it and the line break after it: two lines become one.
    assert new.observations == "Date: Dec 4, 2025\n* 🔴 (14:30) User asked about* 🔴 (14:31) User booked the vet"


def test_a_json_object_in_extracted_values_wins_over_the_tags() -> None:
    text = HINTED + '<extracted-values>{"current-task": "From JSON", "suggested-response": 3}</extracted-values>'
    assert extracted_hints(text, CONTINUATION_HINT_TAGS) == {"current-task": "From JSON",
                                                             "suggested-response": "inline"}
    quoted = '<current-task>"quoted"</current-task>'
    assert extracted_hints(quoted, CONTINUATION_HINT_TAGS) == {"current-task": "quoted"}
    assert extracted_hints("<current-task> </current-task>", CONTINUATION_HINT_TAGS) == {}
    assert "extracted-values" not in strip_hint_sections(text, CONTINUATION_HINT_TAGS)
    assert strip_hint_sections(text, ()) == text  # 1.10 has no such sections


def test_reflector_hint_sections_keep_both_hints_and_strip_them() -> None:
    text = "<observations>\n* 🔴 (09:00) kept <current-task>x</current-task>\n</observations>\n" + (
        "<suggested-response>\nReply\n</suggested-response>")
    old = parse_reflector_output(text)
    new = parse_reflector_output(text, hint_tags=CONTINUATION_HINT_TAGS)
    assert (old.current_task, old.suggested_response) == (None, "Reply") and "<current-task>" in old.observations
    assert (new.current_task, new.suggested_response) == ("x", "Reply")
    # The cut joins the closing tag to the line, so the block is gone and the list line is what is left.
    assert new.observations == "* 🔴 (09:00) kept</observations>"


def test_multi_thread_hint_sections_are_cut_from_every_block() -> None:
    text = """<observations>
<thread id="a">
* 🔴 (09:00) fact one
<current-task>first</current-task>
<current-task>second</current-task>
</thread>
</observations>"""
    old = parse_multi_thread_output(text).threads["a"]
    new = parse_multi_thread_output(text, hint_tags=CONTINUATION_HINT_TAGS).threads["a"]
    assert old.current_task == "first" and "<current-task>second</current-task>" in old.observations
    assert new.current_task == "second" and new.observations == "* 🔴 (09:00) fact one"


_BLOCK_PIECES = st.sampled_from([
    "<observations>", "</observations>", "<OBSERVATIONS>", "</Observations>", "<observation>", "</observations",
    '<thread id="a">', '<THREAD\tid="b c">', '<thread id="">', "<thread id=a>", '<thread\u3000id="x>y">', "<thread",
    "</thread>", "</THREAD>", "</thread", "\n", "\r", "\u2029", "\x85", "\x0b", "\u2028", " ", "\t", "x", "* 🔴 a",
    "İ", "\u212a", ">", "<", '"',
])


@settings(max_examples=1500, deadline=None)
@given(pieces=st.lists(_BLOCK_PIECES, max_size=30))
@example(pieces=["<observations>", "\n", "<observations>", "\n", "x", "\n", "</observations>", "\n", "</observations>",
                 "\n", "<observations>", "\n", "</observations>"])
@example(pieces=['<thread id="a">', '<thread id="b">', "x", "</thread>", "</thread>", '<thread id="c">', "</thread>"])
def test_the_blocks_found_with_find_are_the_lazy_patterns_blocks(pieces: list[str]) -> None:
    text = "".join(pieces)
    match = parsing._OBSERVATIONS_BLOCK.search(text)
    assert parsing._observations_body(text) == (match.group(1) if match else None)
    assert list(parsing._observations_bodies(text)) == parsing._OBSERVATIONS_BLOCK.findall(text)
    assert parsing._thread_blocks(text) == parsing._THREAD_BLOCK.findall(text)
