"""Observer replies that repeat old observations: the detector, the retry in ``call_observer``, the engine's event."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from om_eval.om import Message, ObservationalMemory, ObservationConfig, OMConfig
from om_eval.om.config import ModelSettings
from om_eval.om.model import ChatMessage, ModelReply, ReplyCheck, Stage
from om_eval.om.observer import ObserverCall, call_observer
from om_eval.om.suspect import _STOPWORDS, MAX_GROUNDING, find_repetition, line_tokens
from om_eval.testing.scripted.model import ScriptedModel

# Two vocabularies with no word (nor stem) in common: old observations and new messages never share a word.
OLD_WORDS = ("kayak", "harbour", "lantern", "violin", "orchard", "granite", "falcon", "pottery", "saffron",
             "glacier", "tandem", "quilt")
NEW_WORDS = ("spreadsheet", "invoice", "dentist", "mortgage", "printer", "basil", "tuxedo", "wallpaper", "yoga",
             "scooter", "podcast", "cactus")
MARKERS = ("🔴", "🟡", "🟢", "✅")
plain_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=9).filter(
    lambda w: w not in _STOPWORDS)


def bullet(marker: str, minute: int, words: Sequence[str]) -> str:
    return f"* {marker} (09:{minute:02d}) User stated: " + " ".join(words)


@st.composite
def observation_lines(draw: st.DrawFn, vocabulary: Sequence[str] | st.SearchStrategy[str]) -> list[str]:
    words = vocabulary if isinstance(vocabulary, st.SearchStrategy) else st.sampled_from(vocabulary)
    count = draw(st.integers(1, 8))
    return [
        bullet(draw(st.sampled_from(MARKERS)), draw(st.integers(0, 59)), draw(st.lists(words, min_size=2, max_size=7)))
        for _ in range(count)
    ]


def history(words: Sequence[str]) -> str:
    return "**User (Mar 3, 2024, 9:15 AM):**\n" + " ".join(words)


# -- the detector ----------------------------------------------------------------------------------------------


@given(observation_lines(OLD_WORDS), st.data(), st.lists(st.sampled_from(NEW_WORDS), min_size=1, max_size=40))
def test_a_reply_made_of_previous_lines_about_nothing_new_is_flagged(
    previous: list[str], data: st.DataObject, new_words: list[str]
) -> None:
    copied = data.draw(st.lists(st.sampled_from(previous), min_size=1, max_size=6))
    # The copy may change the marker, the time or the bullet: still the same observation.
    reply = "\n".join(["Date: Mar 3, 2024", *(line.replace("(09:", "(14:").replace("* ", "- ", 1) for line in copied)])
    found = find_repetition(reply, "Date: Feb 1, 2024\n" + "\n".join(previous), history(new_words))
    assert found is not None
    assert found.repeated_share == 1.0 and found.grounding == 0.0 and found.lines == len(copied)
    assert found.sample.endswith(copied[0].split("User stated: ")[1])


@given(observation_lines(plain_words), observation_lines(plain_words), st.lists(plain_words, max_size=30))
def test_a_reply_grounded_in_the_new_messages_is_never_flagged(
    previous: list[str], reply_lines: list[str], extra: list[str]
) -> None:
    batch = [word for line in reply_lines for word in line.split("User stated: ")[1].split()] + extra
    # Even when every reply line was already observed, words from the batch make it a legitimate note.
    for shown in (previous, previous + reply_lines):
        assert find_repetition("\n".join(reply_lines), "\n".join(shown), history(batch)) is None


@given(st.text(max_size=300), st.text(max_size=300),
       st.sampled_from(["", "   \n", "Date: Mar 3, 2024", '<thread id="x">\n</thread>', "\n\nDate: May 1, 2024\n"]))
def test_no_previous_observations_never_flag(reply: str, new_messages: str, previous: str) -> None:
    assert find_repetition(reply, previous, new_messages) is None


def test_near_copies_count_as_repeats_and_distinct_lines_do_not() -> None:
    previous = "* 🔴 (09:00) User keeps a falcon named Orla at the granite harbour"
    near = "* 🟡 (18:30) User keeps a falcon named Orla at the granite harbour."
    other = "* 🔴 (10:00) User keeps a falcon"
    assert line_tokens(previous) == line_tokens(near)
    assert find_repetition(near, previous, history(["invoice"])) is not None
    assert find_repetition(other, previous, history(["invoice"])) is None  # Jaccard 3/9, not a copy


def test_half_repeated_lines_are_not_enough() -> None:
    previous = "* 🔴 (09:00) User bought a kayak\n* 🔴 (09:05) User visits the orchard"
    reply = "* 🔴 (09:00) User bought a kayak\n* 🔴 (11:00) User paints pottery with saffron glaze"
    assert find_repetition(reply, previous, history(["invoice"])) is None


def test_the_description_names_the_share_and_a_line() -> None:
    found = find_repetition("* 🔴 (09:00) User owns a violin", "* 🔴 (08:00) User owns a violin",
                            history(["dentist", "appointment"]))
    assert found is not None and found.grounding < MAX_GROUNDING
    text = found.describe()
    assert "100% of 1 reply lines repeat earlier observations" in text and "User owns a violin" in text


# -- the scripted model's repeat fault ---------------------------------------------------------------------------


def message(ident: str, text: str, minutes: int, thread: str = "t1") -> Message:
    return Message(ident, thread, "user", text, datetime(2024, 3, 3, 9, 0) + timedelta(minutes=minutes))


FIRST = "I adopted a beagle named Toby last spring."
SECOND = "We repainted the kitchen a pale green colour yesterday."


def thread_memory(observer: ScriptedModel, **changes: object) -> ObservationalMemory:
    config = replace(OMConfig(observation=ObservationConfig(message_tokens=30_000, buffer_tokens=False)), **changes)
    return ObservationalMemory(config, observer=observer, resource_id="r")


def two_observations(memory: ObservationalMemory, thread: str = "t1") -> None:
    memory.add_message(message("m1", FIRST, 0, thread))
    asyncio.run(memory.observe(thread, force=True))
    memory.add_message(message("m2", SECOND, 60, thread))
    asyncio.run(memory.observe(thread, force=True))


def test_the_scripted_repeat_fault_copies_previous_lines_and_needs_some() -> None:
    model = ScriptedModel(faults={"observer": ["repeat", "repeat", "repeat"]}, history=None)
    memory = thread_memory(model)
    two_observations(memory)
    first, second = model.calls_for("observer")[:2]
    assert "beagle" in first.reply  # nothing was shown yet: a normal answer
    assert "beagle" in second.reply and "kitchen" not in second.reply


# -- the retry in call_observer ----------------------------------------------------------------------------------


class CheckingModel:
    """A model behind an imaginary cache: records what the check said of each reply, answers from a list."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.seen: list[tuple[int, str | None]] = []
        self.sent: list[list[dict[str, str]]] = []

    async def complete(self, messages: Sequence[ChatMessage], *, stage: Stage, settings: ModelSettings) -> ModelReply:
        raise AssertionError("call_observer must use complete_checked")

    async def complete_checked(
        self, messages: Sequence[ChatMessage], *, stage: Stage, settings: ModelSettings,
        check: ReplyCheck | None = None, attempt: int = 0,
    ) -> ModelReply:
        text = self.replies.pop(0)
        self.sent.append([dict(m) for m in messages])
        self.seen.append((attempt, check(text) if check else None))
        return ModelReply(text, settings.model)


OLD = "Date: Mar 1, 2024\n* 🔴 (09:00) User adopted a beagle named Toby"
COPY = "<observations>\nDate: Mar 3, 2024\n* 🔴 (10:00) User adopted a beagle named Toby\n</observations>"
GOOD = "<observations>\nDate: Mar 3, 2024\n* 🔴 (10:00) User repainted the kitchen pale green\n</observations>"


def observe_with(model: CheckingModel) -> ObserverCall:
    return asyncio.run(call_observer(
        model, ModelSettings(model="test/checking"), "system", [{"role": "user", "content": "history"}],
        multi_thread=False, previous_observations=OLD, new_messages=history(SECOND.split()),
    ))


def test_a_repeat_is_refused_by_the_check_and_retried_as_a_new_attempt() -> None:
    model = CheckingModel([COPY, GOOD])
    call = observe_with(model)
    assert call.suspect is None and "kitchen" in call.output.observations and len(call.replies) == 2
    (first_attempt, first_verdict), (second_attempt, second_verdict) = model.seen
    assert (first_attempt, second_attempt) == (0, 1)
    assert first_verdict is not None and first_verdict.startswith("repeats earlier observations")
    assert second_verdict is None  # only the good reply may be cached


def test_every_retry_asks_the_same_question_again() -> None:
    for first in (COPY, ""):  # a copied reply, an unusable one
        model = CheckingModel([first, GOOD])
        observe_with(model)
        assert model.sent[0] == model.sent[1]


def test_a_repeated_repeat_is_kept_and_marked() -> None:
    call = observe_with(CheckingModel([COPY, COPY]))
    assert call.suspect is not None and call.suspect.repeated_share == 1.0
    assert "beagle" in call.output.observations and len(call.replies) == 2


def test_a_repeat_then_an_unusable_reply_keeps_the_repeat() -> None:
    call = observe_with(CheckingModel([COPY, ""]))
    assert call.suspect is not None and "beagle" in call.output.observations


def test_without_previous_observations_or_an_example_in_the_prompt_nothing_is_flagged() -> None:
    model = CheckingModel([COPY])
    call = asyncio.run(call_observer(
        model, ModelSettings(model="test/checking"), "system", [{"role": "user", "content": "history"}],
        multi_thread=False, new_messages=history(SECOND.split()),
    ))
    assert call.suspect is None and model.seen == [(0, None)]


def test_a_copy_of_the_prompts_example_is_flagged_even_on_the_first_call() -> None:
    system = "Write observations like this example:\n" + OLD  # an instruction text whose example is OLD's line
    model = CheckingModel([COPY, COPY])
    call = asyncio.run(call_observer(
        model, ModelSettings(model="test/checking"), system, [{"role": "user", "content": "history"}],
        multi_thread=False, new_messages=history(SECOND.split()),
    ))
    assert call.suspect is not None and model.seen[0][1].startswith("repeats earlier observations or the prompt's")
    # an honest first reply is untouched by the example
    honest = asyncio.run(call_observer(
        CheckingModel([GOOD]), ModelSettings(model="test/checking"), system, [{"role": "user", "content": "h"}],
        multi_thread=False, new_messages=history(SECOND.split()),
    ))
    assert honest.suspect is None


# -- through the engine ------------------------------------------------------------------------------------------


def kinds(memory: ObservationalMemory) -> list[str]:
    return [event.kind for event in memory.events]


def test_a_first_repeat_is_retried_and_the_good_retry_used_without_an_event() -> None:
    model = ScriptedModel(faults={"observer": ["repeat", "repeat"]}, history=None)  # call 1 has nothing to copy
    memory = thread_memory(model)
    two_observations(memory)
    assert model.call_counts["observer"] == 3
    assert "observation_suspect" not in kinds(memory)
    assert "kitchen" in memory.record("t1").active_observations
    assert memory.events[-1].calls == 2  # the observation event counts both attempts


def test_a_persistent_repeat_is_kept_with_an_observation_suspect_event() -> None:
    model = ScriptedModel(faults={"observer": ["repeat"] * 3}, history=None)
    memory = thread_memory(model)
    two_observations(memory)
    assert model.call_counts["observer"] == 3
    assert kinds(memory) == ["observation", "observation_suspect", "observation"]
    event = memory.events[1]
    assert event.thread_ids == ("t1",) and event.calls == 0
    assert "100% of 1 reply lines repeat" in event.detail and "beagle named Toby" in event.detail
    assert memory.pending_tokens("t1") == 0  # the question goes on: the messages count as observed


def test_multi_thread_repeats_are_flagged_for_the_batch() -> None:
    model = ScriptedModel(faults={"observer": ["repeat"] * 3}, history=None)
    memory = thread_memory(model, scope="resource")
    memory.add_message(message("a1", FIRST, 0, "a"))
    asyncio.run(memory.observe(force=True))
    memory.add_message(message("b1", SECOND, 60, "b"))
    memory.add_message(message("a2", "Then we painted the hallway a pale green colour too.", 61, "a"))
    asyncio.run(memory.observe(force=True))
    suspect = [event for event in memory.events if event.kind == "observation_suspect"]
    assert len(suspect) == 1 and set(suspect[0].thread_ids) == {"a", "b"}
    assert model.call_counts["observer"] == 3


def test_buffered_repeats_are_flagged_too() -> None:
    model = ScriptedModel(faults={"observer": ["repeat"] * 3}, history=None)
    memory = thread_memory(model, observation=ObservationConfig(message_tokens=30_000, buffer_tokens=False))
    memory.add_message(message("m1", FIRST, 0))
    asyncio.run(memory.observe("t1", force=True))
    memory.add_message(message("m2", SECOND, 60))
    chunk = asyncio.run(memory._buffer_observations("t1"))  # the buffering pass, called directly
    assert chunk is not None and "beagle" in chunk.observations
    assert kinds(memory)[-2:] == ["observation_suspect", "observation_buffered"]


@pytest.mark.parametrize("variant", ["current", "legacy", "condensed"])
def test_copying_the_real_prompts_example_is_flagged_for_every_variant(variant: str) -> None:
    from om_eval.om.observer import render_observer_system_prompt

    system = render_observer_system_prompt(variant, multi_thread=False)
    example = [line for line in system.splitlines() if line.lstrip().startswith("* 🔴")][:3]
    assert example, "the prompt shows example observation lines"
    copied = "<observations>\nDate: Jan 20, 2023\n" + "\n".join(example) + "\n</observations>"
    call = asyncio.run(call_observer(
        CheckingModel([copied, copied]), ModelSettings(model="test/checking"), system,
        [{"role": "user", "content": "history"}], multi_thread=False, new_messages=history(SECOND.split()),
    ))
    assert call.suspect is not None


def test_one_copied_thread_in_a_multi_thread_reply_is_flagged() -> None:
    from om_eval.om.observer import render_observer_system_prompt

    system = render_observer_system_prompt("condensed", multi_thread=True)
    example = [line for line in system.splitlines() if line.lstrip().startswith("* 🔴")][:3]
    reply = ('<observations>\n<thread id="t1">\nDate: Jan 20, 2023\n' + "\n".join(example) + "\n</thread>\n"
             '<thread id="t2">\nDate: Mar 3, 2024\n* 🔴 (10:00) User repainted the kitchen pale green\n'
             "* 🔴 (10:05) User repainted the kitchen pale green again\n* 🔴 (10:06) User chose green\n"
             "* 🔴 (10:07) User painted the hall\n</thread>\n</observations>")
    call = asyncio.run(call_observer(
        CheckingModel([reply, reply]), ModelSettings(model="test/checking"), system,
        [{"role": "user", "content": "history"}], multi_thread=True, thread_ids=("t1", "t2"),
        new_messages=history(SECOND.split())
        + "\nI repainted the kitchen pale green and painted the hall, I chose green",
    ))
    assert call.suspect is not None and call.suspect.repeated_share == 1.0 and call.suspect.lines == 3


# Emoji, a variation selector, odd spaces, letters and a lone surrogate.
_ODD = st.sampled_from("🔴🟡✅\ufe0f\xa0\u2028\u3000—’é日\ud800")


@given(st.text(alphabet=st.one_of(st.characters(max_codepoint=300), _ODD), max_size=200))
def test_words_are_the_regexs_words_whatever_the_text(text: str) -> None:
    """The byte-translation split (with the regex for the runs holding other characters) finds exactly ``\\w+``'s
    distinct words."""
    import re

    from om_eval.om.suspect import _words

    lowered = text.lower()
    assert _words(lowered) == set(re.findall(r"\w+", lowered))


_STEMMY_WORDS = st.builds(
    lambda root, suffix: root + suffix,
    st.sampled_from(["glass", "make", "bak", "run", "go", "ship", "the", "user", "ss", "e", "12", "es", "kiss"]),
    st.sampled_from(["", "s", "es", "ed", "ing", "ings", "e", "ss"]),
)


@given(st.lists(_STEMMY_WORDS, max_size=12), st.lists(_STEMMY_WORDS, max_size=40))
def test_grounding_counts_the_reply_stems_the_batch_has_without_stemming_the_batch(reply: list[str],
                                                                                   batch: list[str]) -> None:
    from om_eval.om.suspect import _content_words, _distinct_words, _grounded

    reply_text, batch_text = " ".join(reply).upper(), ", ".join(batch)
    stems = _content_words(reply_text)
    assert _grounded(stems, _distinct_words(batch_text)) == len(stems & _content_words(batch_text))
