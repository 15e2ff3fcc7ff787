"""memory=rag_mastra: what is embedded, which messages come back, and how the actor is shown them."""

from __future__ import annotations

import asyncio
import json

import pytest

from om_eval.bench.seam import grade_ranking
from om_eval.bench.turn_costs import PartRecorder, TurnTable
from om_eval.memory.view import history_view, question_view
from om_eval.om.config import ConfigError
from om_eval.systems.rag_mastra import (
    CHUNK_CHARS,
    MastraRecallSystem,
    recall_prompts,
    split_message,
    stored_messages,
)
from tests.systems.helpers import FakeServices, WordCounter, question, session

HAYSTACK = question(
    session(0, "s0", ("user", "I bake sourdough on Sundays."), ("assistant", "Lovely."),
            ("user", "The weather is grey."), ("assistant", "Sorry to hear."), ("user", "Anyway."),
            ("assistant", "Yes."), day=0),
    session(1, "answer_s1", ("user", "Small talk first."), ("assistant", "Sure."),
            ("user", "I moved to Lisbon, a sunny city.", True), ("assistant", "Congratulations on the move!"),
            ("user", "Thanks."), ("assistant", "Anytime."), ("user", "Bye."), day=3),
    text="Which city?",
)


def run(system: MastraRecallSystem, services: FakeServices):
    index = asyncio.run(system.ingest(history_view(HAYSTACK), services))
    return index, asyncio.run(system.context(index, question_view(HAYSTACK), services))


def test_every_message_is_embedded_once_and_the_query_is_the_question_as_it_is() -> None:
    services = FakeServices()
    run(MastraRecallSystem({}), services)
    assert services.embedded[0] == [t.content for s in HAYSTACK.sessions for t in s.turns]
    assert services.embedded[-1] == ["Which city?"]


def test_a_hit_brings_its_session_neighbours_and_nothing_across_sessions() -> None:
    system = MastraRecallSystem({"top_k": 1, "message_range": 2})
    _, context = run(system, FakeServices())
    assert context.ranked_ids[0] == "answer_s1#1:2" and context.detail["hits"] == 1
    shown = [json.loads(line.split(": ", 1)[1])["content"] for line in context.injected.splitlines()
             if line[:1].isdigit() and "M: {" in line]
    assert shown == ["Small talk first.", "Sure.", "I moved to Lisbon, a sunny city.",
                     "Congratulations on the move!", "Thanks."]


def test_the_layout_has_a_header_per_day_times_five_minutes_apart_and_todays_date_apart() -> None:
    system = MastraRecallSystem({"top_k": 2, "message_range": 0})
    _, context = run(system, FakeServices())
    roles = [m["role"] for m in context.messages]
    assert roles == ["system", "system", "system", "user"] and context.messages[-1]["content"] == HAYSTACK.question
    block = context.messages[1]["content"]
    assert block == context.injected
    assert "2023, May 4" in block and "9:10 AM: " in block  # session date + 2 x 5 minutes
    assert context.messages[2]["content"] == f"Today's date is {HAYSTACK.question_date_text}."


def test_retrieval_ids_are_the_views_turn_ids_and_the_harness_finds_the_evidence_message() -> None:
    _, context = run(MastraRecallSystem({}), FakeServices())
    graded = grade_ranking("rag_mastra", context, HAYSTACK, history_view(HAYSTACK))
    assert graded.correct == ("answer_s1#1:2",)
    # Every message is ranked (recall@k past top_k), though only the top_k hits are shown.
    assert len(context.corpus_ids) == 13 and sorted(context.ranked_ids) == sorted(context.corpus_ids)


def test_long_messages_are_split_on_whitespace_and_keep_their_id() -> None:
    text = ("word " * (CHUNK_CHARS // 5 + 10)).strip()
    chunks = split_message(text)
    assert len(chunks) == 2 and all(len(c) <= CHUNK_CHARS for c in chunks) and " ".join(chunks) == text
    assert split_message("x" * (CHUNK_CHARS + 1)) == ["x" * CHUNK_CHARS, "x"]
    assert stored_messages(history_view(HAYSTACK))[2].id == "s0#0:2"


@pytest.mark.parametrize(("options", "named"), [
    ({"top_k": 0}, "memory.top_k=0"), ({"message_range": -1}, "memory.message_range=-1"),
    ({"topk": 3}, "memory.topk is not an option of memory=rag_mastra")])
def test_bad_options_are_named(options: dict, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        MastraRecallSystem(options)


TALK = question(
    *HAYSTACK.sessions,
    session(2, "s2", ("user", "Which city was that, Lisbon?"), ("assistant", "Lisbon."), ("user", "I bake bread too."),
            ("assistant", "Nice."), day=5),
    text="Which city?",
)


def recorded_turns(options: dict) -> tuple[TurnTable, FakeServices]:
    services = FakeServices(turns=PartRecorder(WordCounter()))
    asyncio.run(MastraRecallSystem(options).ingest(history_view(TALK), services))
    assert services.turns is not None
    return services.turns.finish(), services


def test_each_user_turn_recalls_for_its_own_message_from_earlier_sessions_without_a_model_call() -> None:
    table, services = recorded_turns({"top_k": 1, "message_range": 0})
    assert len(services.embedded) == 1  # the index: each turn's query is its message's own vector
    assert len(table) == sum(t.role == "user" for s in TALK.sessions for t in s.turns) == 9
    lines = [[part.key[1] for part in parts if isinstance(part.key, tuple) and part.key[0] == "line"]
             for parts in services.recorded]
    assert lines[:3] == [[], [], []]  # the first session has nothing earlier to recall
    assert all("answer_s1#1:2" not in shown for shown in lines[3:7])  # never the session's own messages
    assert lines[7] == ["answer_s1#1:2"]  # "Which city was that, Lisbon?" finds the move
    assert lines[8] == ["s0#0:0"]  # "I bake bread too." finds the sourdough


def test_turns_share_their_prefix_until_the_recalled_messages_differ() -> None:
    table, _ = recorded_turns({"top_k": 1, "message_range": 0})
    counter = WordCounter()
    instructions = counter.count_text(recall_prompts()["instructions"])
    # Within the first session nothing is recalled: each turn starts with the whole previous prompt.
    assert table.shared[1] == table.prompt[0] and table.shared[2] == table.prompt[1]
    # The last session's second turn recalls another message: the prefix breaks inside the block.
    opening = counter.count_text(recall_prompts()["block"].split("{messages}")[0])
    assert instructions + opening <= table.shared[8] < table.head[7]
    assert all(head > instructions for head in table.head[3:])
