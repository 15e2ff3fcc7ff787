"""memory=full_context and memory=oracle: LongMemEval's readers as systems behind the seam (sessions oldest first,
the oracle shown only the evidence the harness picks, the cut and the end it keeps, what they say they showed)."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.bench.answer import actor_prompts
from om_eval.bench.baseline import IN_READER_PROMPT, TRUNCATED_AWAY, render_session
from om_eval.bench.seam import SeamError, check_shown, shown_traces
from om_eval.bench.turn_costs import PartRecorder
from om_eval.data import load_dataset, mini_fixture_path
from om_eval.data.loader import dataset_from_records
from om_eval.memory import TURN_SPACING
from om_eval.memory.registry import make_system
from om_eval.memory.view import history_view, question_view
from om_eval.om.config import ConfigError
from om_eval.systems.readers import FullContextReader, OracleReader, ReaderMemory
from tests.golden import assert_golden
from tests.systems.helpers import FakeServices, WordCounter


def lessons_record() -> dict:
    """Three sessions given out of date order; the evidence session (with has_answer) is the middle one in time."""
    return {
        "question_id": "bx000001", "question_type": "single-session-user",
        "question": "Which lessons did I start this spring?", "answer": "cello lessons",
        "question_date": "2023/06/01 (Thu) 09:00",
        "haystack_session_ids": ["ultrachat_900001", "answer_bx000001_1", "sharegpt_Ab12Cd_0"],
        "haystack_dates": ["2023/05/20 (Sat) 10:00", "2023/05/10 (Wed) 18:30", "2023/05/02 (Tue) 08:15"],
        "haystack_sessions": [
            [{"role": "user", "content": "Give me a quick pasta idea."},
             {"role": "assistant", "content": "Garlic, oil and chilli."}],
            [{"role": "user", "content": "I started cello lessons this spring.", "has_answer": True},
             {"role": "assistant", "content": "Lovely instrument {question} to learn.", "has_answer": False}],
            [{"role": "user", "content": "How do I fold a fitted sheet?"},
             {"role": "assistant", "content": "Tuck the corners into each other."}],
        ],
        "answer_session_ids": ["answer_bx000001_1"],
    }


@pytest.fixture(scope="module")
def question():
    return dataset_from_records([lessons_record()], name="reader-test").questions[0]


def read(question, reader: str = "full_context", **options) -> tuple[ReaderMemory, str, tuple[str, ...]]:
    """The reader's memory, its one user message and the turn ids it says it showed, as the harness asks it."""
    system = make_system(reader, options)
    services = FakeServices()
    memory = asyncio.run(system.ingest(history_view(question, system.history_scope), services))
    context = asyncio.run(system.context(memory, question_view(question), services))
    (message,) = context.messages
    assert message["role"] == "user" and context.injected == memory.history
    return memory, message["content"], context.shown_ids


def test_sessions_come_oldest_first_with_has_answer_removed(question) -> None:
    memory, content, shown = read(question)
    assert "has_answer" not in content
    dates = ["2023/05/02 (Tue) 08:15", "2023/05/10 (Wed) 18:30", "2023/05/20 (Sat) 10:00"]
    positions = [content.index(d) for d in dates]
    assert positions == sorted(positions)
    # The current date and the question close the message; braces in a chat are left alone.
    assert content.endswith("Current Date: 2023/06/01 (Thu) 09:00\nQuestion: Which lessons did I start this "
                            "spring?\nAnswer:")
    assert "Lovely instrument {question} to learn." in content
    assert memory.history_tokens == memory.shown_tokens and memory.sessions == 3 and len(shown) == 6


def test_the_oracle_is_shown_only_the_evidence_the_harness_picks(question) -> None:
    assert OracleReader.history_scope == "evidence" and FullContextReader.history_scope == "all"
    assert [s.session_id for s in history_view(question, "evidence").sessions] == ["answer_bx000001_1"]
    memory, content, shown = read(question, "oracle")
    assert "cello" in content and "pasta" not in content and "fitted sheet" not in content
    assert content.count("### Conversation") == 1 and memory.sessions == 1
    assert shown == ("answer_bx000001_1#1:0", "answer_bx000001_1#1:1")


def test_upstream_cuts_the_newest_part_and_keep_end_cuts_the_oldest(question) -> None:
    full, _, _ = read(question, tokenizer="chars/1")  # one token per character: the budget is easy to reason about
    budget = full.history_tokens // 2
    options = {"tokenizer": "chars/1", "context_tokens": budget + 1 + 1000, "max_tokens": 1}
    start, _, start_shown = read(question, **options)
    end, _, end_shown = read(question, **options, keep="end")
    assert start.shown_tokens <= budget < start.history_tokens and end.shown_tokens <= budget
    assert "fitted sheet" in start.history and "pasta" not in start.history  # the oldest session survives
    assert "pasta" in end.history and "fitted sheet" not in end.history      # the newest session survives
    assert "sharegpt_Ab12Cd_0#2:0" in start_shown and "ultrachat_900001#0:0" not in start_shown
    assert "ultrachat_900001#0:1" in end_shown and "sharegpt_Ab12Cd_0#2:0" not in end_shown


def test_the_harness_traces_what_the_reader_showed(question) -> None:
    _, _, shown = read(question)
    traces = shown_traces(shown, question, history_view(question))
    assert [(t.session_id, t.status, t.answer_in_lines) for t in traces] == [
        ("answer_bx000001_1", IN_READER_PROMPT, True)]  # the gold answer is in the turn the reader saw
    first = len(render_session(1, question.sessions_by_date()[0], "json"))  # only the oldest (filler) session fits
    _, _, shown = read(question, tokenizer="chars/1", context_tokens=first + 1 + 1000, max_tokens=1)
    assert [t.status for t in shown_traces(shown, question, history_view(question))] == [TRUNCATED_AWAY]


def test_a_shown_id_outside_the_given_history_is_refused(question) -> None:
    with pytest.raises(SeamError, match="memory=oracle says it showed 'ultrachat_900001#0:0'"):
        check_shown("oracle", ["ultrachat_900001#0:0"], history_view(question, "evidence"))


def test_rendered_prompt_golden() -> None:
    mini = load_dataset(path=mini_fixture_path()).by_id()["5ed4ff79"]
    assert_golden("baseline_full_context_json.txt", read(mini)[1])
    assert_golden("baseline_oracle_nl.txt", read(mini, "oracle", format="nl")[1])


def test_readers_keep_the_identity_they_had_before_the_seam() -> None:
    system = make_system("oracle", {"max_tokens": 300})
    pinned = system.pinned_identity()
    assert pinned is not None and pinned.memory_key == "baseline:oracle" and not pinned.per_history
    assert set(pinned.prompts) == {"baseline"} and pinned.stored_prompts == {**pinned.prompts, "reader": "oracle"}
    assert system.max_output_tokens == 300 and not system.uses_observer_model
    assert system.budget() == {"context_tokens": 128_000 - 300 - 1000}


@pytest.mark.parametrize(("options", "message"), [
    ({"formt": "nl"}, "memory.formt is not an option of memory=full_context"),
    ({"format": "yaml"}, "baseline.format='yaml' is invalid"),
    ({"context_tokens": 1200}, "leaves no room for the history"),
])
def test_bad_options_name_the_option(options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_system("full_context", options)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), keep=st.sampled_from(["start", "end"]))
def test_the_full_context_turns_share_what_a_prompt_by_prompt_comparison_shares(data: st.DataObject,
                                                                                 keep: str) -> None:
    roles = data.draw(st.lists(st.sampled_from(["user", "assistant"]), min_size=1, max_size=30))
    sizes = data.draw(st.lists(st.integers(0, 40), min_size=len(roles), max_size=len(roles)))
    budget = data.draw(st.integers(1, 400))
    # No two texts share a first character, so a prompt shares with the previous one only whole messages.
    turns = [(role, chr(0x4E00 + i) + " w" * size) for i, (role, size) in enumerate(zip(roles, sizes))]
    record = {**lessons_record(), "haystack_session_ids": ["s_a"], "answer_session_ids": [],
              "haystack_dates": ["2023/05/02 (Tue) 08:15"],
              "haystack_sessions": [[{"role": r, "content": c} for r, c in turns]]}
    question = dataset_from_records([record], name="turns").questions[0]
    system = FullContextReader({"context_tokens": budget + 1500, "max_tokens": 500, "keep": keep})
    services = FakeServices(turns=PartRecorder(WordCounter()))
    asyncio.run(system.ingest(history_view(question), services))
    table = services.turns.table
    words = [len(c.split()) for _, c in turns]
    head = len(actor_prompts()["instructions"].split())
    previous = None
    user_turns = [i for i, (role, _) in enumerate(turns) if role == "user"]
    assert len(table) == len(user_turns)
    for row, i in enumerate(user_turns):  # the brute force: which messages each prompt keeps, compared whole
        kept = list(range(i))
        while sum(words[k] for k in kept) > budget:
            kept.pop(-1 if keep == "start" else 0)
        prompt = [*kept, i]
        shared = 0
        if previous is not None:
            shared = head
            for mine, theirs in zip(prompt, previous, strict=False):
                if mine != theirs:
                    break
                shared += words[mine]
        reply = words[i + 1] if i + 1 < len(turns) and turns[i + 1][0] == "assistant" else 0
        assert (table.prompt[row], table.shared[row], table.head[row], table.reply[row]) == (
            head + sum(words[k] for k in prompt), shared, head, reply)
        assert table.at[row] == (question.sessions[0].date + TURN_SPACING * i).timestamp()
        previous = prompt


def test_the_oracle_records_no_turns(question) -> None:
    services = FakeServices(turns=PartRecorder(WordCounter()))
    asyncio.run(OracleReader().ingest(history_view(question, "evidence"), services))
    assert len(services.turns.table) == 0 and json.loads(services.turns.table.to_json())["at"] == []
