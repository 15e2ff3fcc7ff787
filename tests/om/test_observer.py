"""Observer prompts (golden), message formatting, request layouts and the degenerate-retry rule."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.om.config import PARAPHRASE_VARIANTS, ModelSettings
from om_eval.om.observer import (
    QUESTION_EMOJI,
    ObserverOutputError,
    ObserverRequest,
    ThreadHints,
    call_observer,
    extraction_instructions,
    format_message,
    format_message_time,
    format_messages,
    format_thread_blocks,
    observer_output_format,
    question_emoji_of,
    render_observer_request,
    render_observer_system_prompt,
)
from om_eval.om.parsing import (
    CONTINUATION_HINT_TAGS,
    MultiThreadOutput,
    ObserverOutput,
    parse_multi_thread_output,
    parse_observer_output,
)
from om_eval.om.prompts import load_prompts
from om_eval.om.records import Message
from om_eval.testing.scripted.model import ScriptedModel
from tests.golden import assert_golden
from tests.om.fakes import QueueModel

VARIANTS = ("current", "current_v1_3", "legacy", "condensed")
#: Headings of the rules that came with @mastra/memory 1.9 (om-reference §2.2a item 11), in our wording.
ADDED_IN_1_9 = ("CAPTURING USER MESSAGES", "AVOIDING REPETITIVE OBSERVATIONS", "TRACKING COMPLETION",
                "ORDER OF EVENTS")
SETTINGS = ModelSettings(model="test/observer")
WHEN = datetime(2025, 12, 4, 14, 30)
GOOD = "<observations>\nDate: Dec 4, 2025\n* 🔴 (14:30) User stated they have a beagle.\n</observations>"
LOOP = "* 🔴 (09:00) User stated the same thing again and again.\n" * 100


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("multi_thread", [False, True], ids=["single", "multi"])
def test_system_prompt_golden(variant: str, multi_thread: bool) -> None:
    prompt = render_observer_system_prompt(variant, multi_thread=multi_thread)
    assert_golden(f"observer_{variant}_{'multi' if multi_thread else 'single'}.txt", prompt)


def test_system_prompt_sections_and_variant_differences() -> None:
    single = render_observer_system_prompt("current", multi_thread=False)
    multi = render_observer_system_prompt("current", multi_thread=True)
    assert "=== IMPORTANT: THREAD ATTRIBUTION ===" in single and "THREAD ATTRIBUTION" not in multi
    assert "=== MULTI-THREAD INPUT ===" in multi and "MULTI-THREAD" not in single
    assert "{question_emoji}" not in single
    legacy = render_observer_system_prompt("legacy", multi_thread=False)
    condensed = render_observer_system_prompt("condensed", multi_thread=False)
    # Sizes of the same order as the reference table (§2.1): current ~14k chars, legacy and condensed ~6k.
    assert 11_000 < len(single) < 20_000
    assert 4_000 < len(legacy) < 9_000 and 4_000 < len(condensed) < 9_000
    assert "(meaning" in single and "(meaning" not in legacy


def test_every_configurable_variant_renders() -> None:
    assert set(VARIANTS) == set(PARAPHRASE_VARIANTS) == set(QUESTION_EMOJI)


@pytest.mark.parametrize("multi_thread", [False, True], ids=["single", "multi"])
def test_current_v1_3_is_the_1_3_prompt(multi_thread: bool) -> None:
    v1_3 = render_observer_system_prompt("current_v1_3", multi_thread=multi_thread)
    today = render_observer_system_prompt("current", multi_thread=multi_thread)
    # The same rules 1-10 as current, with user questions marked 🟡 (1.5 switched them to 🔴) ...
    rules = load_prompts("observer_current")["extraction"]
    assert extraction_instructions("current_v1_3") == rules.replace("{question_emoji}", "🟡")
    assert "🟡 User asked" in v1_3 and "🔴 User asked" not in v1_3 and "🔴 User asked" in today
    # ... and nothing that came with 1.9: no added rules, no ✅ marker, no near-verbatim guideline.
    for heading in ADDED_IN_1_9:
        assert heading not in v1_3 and heading in today
    assert "✅" not in v1_3 and "✅" in today
    assert "almost word for word" not in v1_3
    if multi_thread:
        # 1.1-1.3 showed the two-thread example and the legend, not the standard format block.
        assert "Example layout:" not in v1_3 and "Example layout:" in today
        assert v1_3.index("Example with two threads:") < v1_3.index("🟢 Low") < v1_3.index("=== GUIDELINES ===")
    else:
        assert "=== IMPORTANT: THREAD ATTRIBUTION ===" in v1_3 and "goals the user has reached" in v1_3
    # Of the order of the reference's 1.3 sizes (§2.1: ~14.3k chars single, ~13.6k multi; our rules are terser).
    assert 10_000 < len(v1_3) < len(today)


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_prompt_names_its_question_marker(variant: str) -> None:
    for multi_thread in (False, True):
        prompt = render_observer_system_prompt(variant, multi_thread=multi_thread)
        assert question_emoji_of(prompt) == QUESTION_EMOJI[variant]
    assert question_emoji_of("an unrelated system prompt") is None


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("multi_thread", [False, True], ids=["single", "multi"])
def test_scripted_model_answers_every_variant_with_its_question_marker(variant: str, multi_thread: bool) -> None:
    messages = [Message("m1", "t", "user", "I adopted a beagle. Which vet is open on Sundays?", WHEN)]
    if multi_thread:
        history = format_thread_blocks({"a1": messages})
        request = ObserverRequest(history=history, thread_count=1)
    else:
        request = ObserverRequest(history=format_messages(messages))
    system = render_observer_system_prompt(variant, multi_thread=multi_thread)
    call = run(call_observer(ScriptedModel(), SETTINGS, system, render_observer_request(request),
                             multi_thread=multi_thread, thread_ids=("a1",) if multi_thread else ()))
    raw = call.replies[-1].text
    output = parse_multi_thread_output(raw).threads["a1"] if multi_thread else parse_observer_output(raw)
    emoji = QUESTION_EMOJI[variant]
    assert output.observations.splitlines()[1:] == [
        "* 🔴 (14:30) User stated: I adopted a beagle.",
        f"* {emoji} (14:30) User asked: Which vet is open on Sundays?",
    ]


def test_custom_instruction_and_thread_title_are_appended() -> None:
    prompt = render_observer_system_prompt("legacy", multi_thread=False, instruction="  Track pet names.  ",
                                           thread_title=True)
    assert prompt.endswith("=== CUSTOM INSTRUCTIONS ===\n\nTrack pet names.")
    assert "<thread-title>" in prompt
    assert "CUSTOM INSTRUCTIONS" not in render_observer_system_prompt("legacy", multi_thread=False, instruction=" ")


def test_message_time_is_en_us_12_hour() -> None:
    assert format_message_time(datetime(2025, 12, 4, 14, 30)) == "Dec 4, 2025, 2:30 PM"
    assert format_message_time(datetime(2025, 1, 9, 0, 5)) == "Jan 9, 2025, 12:05 AM"
    assert format_message_time(datetime(2025, 1, 9, 12, 0)) == "Jan 9, 2025, 12:00 PM"


@settings(deadline=None)
@given(moment=st.datetimes())
def test_message_times_name_months_as_the_c_locale_does(moment: datetime) -> None:
    # strftime's %b in the C locale (the tests' locale) is the en-US abbreviation the table must give.
    hour = moment.hour % 12 or 12
    expected = f"{moment:%b} {moment.day}, {moment.year}, {hour}:{moment:%M} {'AM' if moment.hour < 12 else 'PM'}"
    assert format_message_time(moment) == expected


def test_message_formatting_parts_caps_and_empty_messages() -> None:
    text = Message("m1", "t", "user", "I have a beagle.", WHEN)
    tool = Message("m2", "t", "assistant", (
        {"type": "tool-call", "tool_name": "search", "args": {"q": "beagle"}},
        {"type": "tool-result", "tool_name": "search", "result": {"hits": 3}},
        {"type": "data-om-status", "data": {}},
        {"type": "image", "name": "dog.png"},
    ), WHEN)
    empty = Message("m3", "t", "user", "", WHEN)
    blank = Message("m5", "t", "user", "  ", WHEN)
    assert format_message(text) == "**User (Dec 4, 2025, 2:30 PM):**\nI have a beagle."
    assert format_message(tool) == (
        "**Assistant (Dec 4, 2025, 2:30 PM):**\n[Tool Call: search]\n{\n  \"q\": \"beagle\"\n}\n"
        "[Tool Result: search]\n{\n  \"hits\": 3\n}\n[Image #1: dog.png]"
    )
    assert format_message(empty) is None
    assert format_messages([text, empty, text]).count("\n\n---\n\n") == 1
    assert format_message(blank) == "**User (Dec 4, 2025, 2:30 PM):**\n  "  # kept, as 1.10 keeps it
    long = Message("m4", "t", "user", "x" * 600, WHEN)
    assert format_message(long, max_part_length=500).endswith("x" * 500 + "\n... [truncated 100 characters]")
    assert format_message(long, max_part_length=0).endswith("x" * 600)  # 0 means no cap, as in 1.10
    # Lengths are UTF-16 units, as JS counts them; a cut never splits an emoji.
    emoji = Message("m6", "t", "user", "ab" + "🔴" * 3, WHEN)
    assert format_message(emoji, max_part_length=5).endswith("\nab🔴\n... [truncated 3 characters]")
    assert format_message(emoji, max_part_length=8).endswith("\nab🔴🔴🔴")


def test_request_layouts() -> None:
    history = format_messages([Message("m1", "t", "user", "I have a beagle.", WHEN)])
    request = ObserverRequest(
        history=history,
        previous_observations="Date: Dec 1, 2025\n* 🔴 (09:00) User stated they live in Porto.",
        previous_truncated=True,
        hints={"": ThreadHints(current_task="Plan the trip", suggested_response=None)},
    )
    split = render_observer_request(request, "split")
    single = render_observer_request(request, "single")
    assert len(split) == 2 and len(single) == 1
    assert split[1]["content"].startswith("## New Message History to Observe") and history in split[1]["content"]
    assert "- prior current-task: Plan the trip" in split[0]["content"]
    assert "suggested-response" not in split[0]["content"].split("## Prior Thread Metadata")[1].split("\n\n")[1]
    assert "shortened" in split[0]["content"]  # the truncation notice is shown whenever truncation happened
    assert single[0]["content"].index("## New Message History") < single[0]["content"].index("## Your Task")
    assert_golden("observer_request_split.txt", "\n\n=====\n\n".join(m["content"] for m in split))
    assert_golden("observer_request_single.txt", single[0]["content"])


def test_multi_thread_request_names_thread_count_and_hints_per_thread() -> None:
    blocks = format_thread_blocks({"a1": [Message("m1", "x", "user", "Hi.", WHEN)], "b2": []})
    request = ObserverRequest(history=blocks, thread_count=2, hints={"a1": ThreadHints(current_task="Say hi")},
                              skip_continuation_hints=True)
    task, history = render_observer_request(request)
    assert "2 different threads" in history["content"] and '<thread id="a1">' in history["content"]
    assert '<thread id="a1">\n- prior current-task: Say hi\n</thread>' in task["content"]
    assert "output only the <observations> block" in task["content"]


def run(coro):
    return asyncio.run(coro)


def test_good_answer_is_accepted_first_time() -> None:
    model = QueueModel([GOOD])
    call = run(call_observer(model, SETTINGS, "system", [{"role": "user", "content": "x"}], multi_thread=False))
    assert isinstance(call.output, ObserverOutput) and "beagle" in call.output.observations
    assert len(call.replies) == 1 and model.requests[0][0] == {"role": "system", "content": "system"}


@pytest.mark.parametrize("bad", [LOOP, "There is nothing in the requested format."])
def test_degenerate_or_unusable_answer_is_retried_once(bad: str) -> None:
    call = run(call_observer(QueueModel([bad, GOOD]), SETTINGS, "s", [], multi_thread=False))
    assert len(call.replies) == 2 and "beagle" in call.output.observations


def test_twice_degenerate_raises() -> None:
    with pytest.raises(ObserverOutputError, match="unusable output 2 times"):
        run(call_observer(QueueModel([LOOP, LOOP]), SETTINGS, "s", [], multi_thread=False))


def test_explicit_empty_observations_are_a_valid_answer() -> None:
    call = run(call_observer(QueueModel(["<observations>\n</observations>"]), SETTINGS, "s", [], multi_thread=False))
    assert call.output.observations == ""


def test_multi_thread_answer_without_thread_blocks_is_retried() -> None:
    good = '<observations>\n<thread id="a1">\n* 🔴 (09:00) User stated hi.\n</thread>\n</observations>'
    call = run(call_observer(QueueModel(["just prose", good]), SETTINGS, "s", [], multi_thread=True))
    assert isinstance(call.output, MultiThreadOutput) and set(call.output.threads) == {"a1"}


class CheckedQueueModel(QueueModel):
    """A :class:`~om_eval.om.model.CheckedChatModel`: records the attempt number and the check of each call."""

    def __init__(self, answers: list[str | Exception]) -> None:
        super().__init__(answers)
        self.attempts: list[int] = []
        self.verdicts: list[str | None] = []

    async def complete_checked(self, messages, *, stage, settings, check=None, attempt=0):
        reply = await self.complete(messages, stage=stage, settings=settings)
        self.attempts.append(attempt)
        self.verdicts.append(check(reply.text) if check is not None else "no check")
        return reply


@pytest.mark.parametrize(("bad", "reason"), [(LOOP, "degenerate"), ("", "empty reply"),
                                             ("Nothing to report.", "no <observations>")])
def test_the_retry_differs_only_by_its_attempt_number_and_bad_replies_are_flagged(bad: str, reason: str) -> None:
    # Regression: the retry was the identical request, so a caching model served it the cached bad reply.
    model = CheckedQueueModel([bad, GOOD])
    user = [{"role": "user", "content": "history"}]
    call = run(call_observer(model, SETTINGS, "s", user, multi_thread=False))
    assert "beagle" in call.output.observations
    assert model.attempts == [0, 1] and model.requests[0] == model.requests[1]
    assert reason in (model.verdicts[0] or "") and model.verdicts[1] is None


def test_multi_thread_check_refuses_answers_for_no_thread_of_the_batch() -> None:
    other = '<observations>\n<thread id="zz">\n* 🔴 (09:00) User stated hi.\n</thread>\n</observations>'
    good = '<observations>\n<thread id="a1">\n* 🔴 (09:00) User stated hi.\n</thread>\n</observations>'
    model = CheckedQueueModel([other, good])
    call = run(call_observer(model, SETTINGS, "s", [], multi_thread=True, thread_ids=("a1",)))
    assert set(call.output.threads) == {"a1"} and model.attempts == [0, 1]  # type: ignore[union-attr]  # the call succeeded: it has an output
    assert "no <observations> for any thread" in (model.verdicts[0] or "") and model.verdicts[1] is None


# ----------------------------------------------------------------------------- 1.10's rules (reply_checks=mastra)


@pytest.mark.parametrize("reply", ["", "Nothing to report."])
def test_as_mastra_a_reply_without_observations_is_applied_as_nothing(reply: str) -> None:
    model = CheckedQueueModel([reply])
    call = run(call_observer(model, SETTINGS, "s", [], multi_thread=False, checks="mastra"))
    assert call.output.observations == "" and len(call.replies) == 1 and model.verdicts == [None]


def test_as_mastra_a_degenerate_reply_is_retried_once_then_raises() -> None:
    model = CheckedQueueModel([LOOP, GOOD])
    called = run(call_observer(model, SETTINGS, "s", [], multi_thread=False, checks="mastra"))
    assert "beagle" in called.output.observations
    assert model.attempts == [0, 1] and "degenerate" in (model.verdicts[0] or "")
    with pytest.raises(ObserverOutputError, match="degenerate output 2 times"):
        run(call_observer(QueueModel([LOOP, LOOP]), SETTINGS, "s", [], multi_thread=False, checks="mastra"))


def test_as_mastra_no_repeat_check_and_other_threads_are_accepted() -> None:
    old = "Date: Dec 4, 2025\n* 🔴 (14:30) User stated they have a beagle."
    repeat = run(call_observer(QueueModel([GOOD]), SETTINGS, "s", [], multi_thread=False, checks="mastra",
                               previous_observations=old, new_messages="User: the weather is fine today"))
    assert repeat.suspect is None and len(repeat.replies) == 1
    checked = run(call_observer(QueueModel([GOOD, GOOD]), SETTINGS, "s", [], multi_thread=False,
                                previous_observations=old, new_messages="User: the weather is fine today"))
    assert checked.suspect is not None and len(checked.replies) == 2  # what om-eval's rules would have done
    other = '<observations>\n<thread id="zz">\n* 🔴 (09:00) User stated hi.\n</thread>\n</observations>'
    call = run(call_observer(QueueModel([other]), SETTINGS, "s", [], multi_thread=True, thread_ids=("a1",),
                             checks="mastra"))
    assert set(call.output.threads) == {"zz"}  # type: ignore[union-attr]  # the call succeeded: it has an output


@pytest.mark.parametrize(("hint_tags", "name"), [(CONTINUATION_HINT_TAGS, "sync"), ((), "buffered"),
                                                 ((*CONTINUATION_HINT_TAGS, "thread-title"), "titled")])
def test_1_27_hint_sections_golden(hint_tags: tuple[str, ...], name: str) -> None:
    """1.27+: the hints as optional sections after the format; a buffered call asks for none at all."""
    older = render_observer_system_prompt("current", multi_thread=True)
    prompt = render_observer_system_prompt("current", multi_thread=True, hint_tags=hint_tags,
                                           thread_title="thread-title" in hint_tags)
    head = observer_output_format("current", ())
    assert head in older and head in prompt  # the format itself is the same
    for tag in hint_tags:
        assert f"<{tag}>" in prompt.split("=== GUIDELINES ===")[0]
    if not hint_tags:
        assert "<current-task>" not in prompt and "<suggested-response>" not in prompt
    assert_golden(f"observer_current_multi_v1_31_{name}.txt", prompt)


def test_1_27_sync_request_repeats_the_prior_hints_as_blocks() -> None:
    request = ObserverRequest(history="h", hints={"": ThreadHints("Plan the trip", "Ask about dates")},
                              hint_blocks=True)
    task = render_observer_request(request)[0]["content"]
    listed = "- prior current-task: Plan the trip\n- prior suggested-response: Ask about dates"
    assert listed + "\n<current-task>\nPlan the trip\n</current-task>\n<suggested-response>\nAsk about dates\n" in task
