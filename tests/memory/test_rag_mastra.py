"""memory=rag_mastra: what is embedded, which messages come back, and how the actor is shown them."""

from __future__ import annotations

import asyncio
import json

import pytest

from om_eval.memory.rag_mastra import CHUNK_CHARS, MastraRecallSystem, split_message, stored_messages
from om_eval.om.config import ConfigError
from tests.memory.helpers import FakeServices, question, session

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
    index = asyncio.run(system.ingest(HAYSTACK, services))
    return index, asyncio.run(system.context(index, HAYSTACK, services))


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


def test_retrieval_ids_name_the_evidence_message() -> None:
    _, context = run(MastraRecallSystem({}), FakeServices())
    assert context.correct_ids == ("answer_s1#1:2",)
    # Every message is ranked (recall@k past top_k), though only the top_k hits are shown.
    assert len(context.corpus_ids) == 13 and sorted(context.ranked_ids) == sorted(context.corpus_ids)


def test_long_messages_are_split_on_whitespace_and_keep_their_id() -> None:
    text = ("word " * (CHUNK_CHARS // 5 + 10)).strip()
    chunks = split_message(text)
    assert len(chunks) == 2 and all(len(c) <= CHUNK_CHARS for c in chunks) and " ".join(chunks) == text
    assert split_message("x" * (CHUNK_CHARS + 1)) == ["x" * CHUNK_CHARS, "x"]
    assert stored_messages(HAYSTACK)[2].id == "s0#0:2"


@pytest.mark.parametrize(("options", "named"), [
    ({"top_k": 0}, "memory.top_k=0"), ({"message_range": -1}, "memory.message_range=-1"),
    ({"topk": 3}, "memory.topk is not an option of memory=rag_mastra")])
def test_bad_options_are_named(options: dict, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        MastraRecallSystem(options)
