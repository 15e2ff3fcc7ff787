"""Answering through the memory seam: the harness's layout, the context column, a ranking checked and graded by the
harness (never by the system), a memory that must come back from context() unchanged."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.bench.retrieval import Granularity, correct_ids, evaluate_retrieval, history_documents, retrieval_documents
from om_eval.bench.seam import (
    SeamError,
    SystemBuild,
    actor_input,
    as_context,
    checked_unchanged,
    grade_ranking,
    house_messages,
    retrieval_record,
    retrieval_traces,
)
from om_eval.data.records import HaystackSession, Question, Turn
from om_eval.memory import MemoryContext, MemorySystemBase
from om_eval.memory.view import history_view
from tests.systems.helpers import WordCounter, question, session

QUESTION = question(session(0, "answer_a", ("user", "I moved to Lisbon.", True)), text="Where do I live?")
THREE = question(session(0, "filler_x", ("user", "hi"), ("assistant", "hello")),
                 session(1, "answer_a", ("user", "I moved to Lisbon.", True), ("assistant", "Nice.")),
                 session(2, "filler_y", ("user", "weather?"), ("assistant", "sunny")))
VIEW = history_view(THREE)


def test_a_text_block_is_laid_out_between_the_instructions_and_the_question() -> None:
    messages = house_messages("<observations>\n- lives in Lisbon\n</observations>", QUESTION)
    assert [m["role"] for m in messages] == ["system", "system", "user"]
    assert messages[1]["content"].startswith("<observations>")
    assert messages[2]["content"] == f"Current Date: {QUESTION.question_date_text}\nQuestion: Where do I live?"
    assert [m["role"] for m in house_messages(None, QUESTION)] == ["system", "user"]


def test_the_context_column_counts_the_memory_only() -> None:
    messages, tokens = actor_input(MemoryContext(memory="a b c"), QUESTION, WordCounter())
    assert tokens == 3 and len(messages) == 3
    whole = MemoryContext(messages=({"role": "user", "content": "read: x y. Where do I live?"},), injected="x y.")
    assert actor_input(whole, QUESTION, WordCounter()) == (
        [{"role": "user", "content": "read: x y. Where do I live?"}], 2)
    assert actor_input(MemoryContext(), QUESTION, WordCounter())[1] == 0


@pytest.mark.parametrize("messages", [(), ({"role": "user", "content": "read: x y."},),
                                      ({"role": "system", "content": "Where do I stay?"},)])
def test_an_actor_prompt_without_the_question_is_refused(messages: tuple) -> None:
    with pytest.raises(SeamError, match="never asked"):
        actor_input(MemoryContext(messages=messages), QUESTION, WordCounter())


def test_a_plugin_may_return_plain_text() -> None:
    assert as_context("- a") == MemoryContext(memory="- a")
    with pytest.raises(TypeError, match="return a str or a MemoryContext"):
        as_context(["- a"])  # type: ignore[arg-type]


def test_the_harness_grades_a_ranking_of_session_ids_as_longmemeval_does() -> None:
    context = MemoryContext(ranked_ids=("filler_x#0", "answer_a#1", "filler_y#2"),
                            corpus_ids=("answer_a#1", "filler_x#0", "filler_y#2"))
    graded = grade_ranking("plugin", context, THREE, VIEW)
    assert graded.correct == ("answer_a#1",)
    record = json.loads(retrieval_record(graded, THREE, 10))
    assert record["k"] == 10 and record["corpus"] == 3 and record["ranked"] == list(context.ranked_ids)
    assert record["metrics"]["recall_any@1"] == 0.0 and record["metrics"]["recall_any@3"] == 1.0
    expected = evaluate_retrieval([1, 0, 2], ["answer_a#1"], ["answer_a#1", "filler_x#0", "filler_y#2"], 5)
    assert (record["metrics"]["recall_any@5"], record["metrics"]["recall_all@5"],
            record["metrics"]["ndcg_any@5"]) == expected


def test_a_ranking_of_turn_ids_is_graded_turn_by_turn_and_the_corpus_defaults_to_every_turn() -> None:
    context = MemoryContext(ranked_ids=("filler_x#0:0", "answer_a#1:1", "answer_a#1:0"))
    graded = grade_ranking("plugin", context, THREE, VIEW)
    assert graded.correct == ("answer_a#1:0",)
    assert graded.corpus == (*context.ranked_ids, "filler_x#0:1", "filler_y#2:0", "filler_y#2:1")
    [trace] = retrieval_traces(graded, THREE, 2)
    assert (trace.session_index, trace.turn_index, trace.status) == (1, 0, "not_retrieved")
    assert retrieval_traces(graded, THREE, 3)[0].status == "retrieved"


def test_a_document_of_the_systems_own_is_graded_by_the_turns_it_holds() -> None:
    context = MemoryContext(ranked_ids=("chunk-2", "chunk-1"), corpus_ids=("chunk-1", "chunk-2"),
                            documents={"chunk-1": ("filler_x#0:0", "filler_x#0:1"),
                                       "chunk-2": ("answer_a#1:0", "answer_a#1:1")})
    assert grade_ranking("plugin", context, THREE, VIEW).correct == ("chunk-2",)


@pytest.mark.parametrize(("ranked", "corpus", "named"), [
    (("answer_a#1", "made-up"), None, "'made-up', which name no turn or session of the history"),
    (("filler_x#0", "filler_x#0"), None, "ranked 'filler_x#0' more than once"),
    (("filler_x#0",), ("filler_x#0", "filler_x#0"), "listed 'filler_x#0' more than once in corpus_ids"),
    (("answer_a#1",), ("filler_x#0",), "ranked 'answer_a#1', not among the 1 corpus_ids"),
])
def test_a_ranking_the_system_cannot_have_made_is_an_error_naming_the_ids(ranked, corpus, named) -> None:
    context = MemoryContext(ranked_ids=ranked, corpus_ids=corpus)
    with pytest.raises(SeamError, match=named):
        grade_ranking("plugin", context, THREE, VIEW)


def test_a_document_holding_turns_outside_the_history_is_refused() -> None:
    context = MemoryContext(ranked_ids=("d",), documents={"d": ("answer_a#1:0", "answer_a#9:0")})
    with pytest.raises(SeamError, match="document 'd' holds 'answer_a#9:0'"):
        grade_ranking("plugin", context, THREE, VIEW)


def test_abstention_and_non_retrieval_answers_keep_no_metrics() -> None:
    abstention = question(session(0, "answer_a", ("user", "hi", True)), qid="q1_abs")
    context = MemoryContext(ranked_ids=("answer_a#0",))
    graded = grade_ranking("plugin", context, abstention, history_view(abstention))
    assert "metrics" not in json.loads(retrieval_record(graded, abstention, 5))
    assert retrieval_record(None, QUESTION, None) is None


class _Appending(MemorySystemBase):
    name = "appending"


def test_a_memory_changed_by_context_fails_the_question() -> None:
    system, memory = _Appending(), {"lines": ["a"]}
    build = SystemBuild(memory, "k", reused=False, digest=system.memory_digest(memory))
    checked_unchanged(system, build)
    memory["lines"].append("b")
    with pytest.raises(SeamError, match="memory=appending changed its memory while answering"):
        checked_unchanged(system, build)


# -- the harness's grading equals upstream's id rule ---------------------------------------------------------------

_content = st.text(alphabet="ab ", max_size=6)


@st.composite
def _questions(draw: st.DrawFn, upstream_ids: bool) -> Question:
    sessions = []
    names = ["answer_a1_1", "answer_a1_2", "x_3", "plain"] if upstream_ids else ["D1", "D2", "D3"]
    for index in range(draw(st.integers(1, 5))):
        # Upstream's rule applies to data that follows it: some session is named as evidence.
        session_id = "answer_a1_0" if upstream_ids and index == 0 else draw(st.sampled_from(names))
        evidence = "answer" in session_id  # upstream requires has_answer on every user turn of these
        turns = tuple(Turn(draw(st.sampled_from(["user", "assistant"])), draw(_content),
                           draw(st.booleans() if evidence or not upstream_ids else st.none() | st.booleans()))
                      for _ in range(draw(st.integers(0, 5))))
        sessions.append(HaystackSession("q", index, session_id, datetime(2023, 5, 1), "d", turns, evidence))
    return Question("q", "multi-session", "what?", "a", datetime(2023, 5, 2), "d", tuple(sessions), ())


def _graded_positions(question: Question, granularity: Granularity) -> list[int]:
    documents = history_documents(history_view(question), granularity)
    ids = tuple(d.id for d in documents)
    context = MemoryContext(ranked_ids=ids, corpus_ids=ids,
                            documents={d.id: d.held_turns for d in documents})
    correct = set(grade_ranking("rag_lme", context, question, history_view(question)).correct)
    return [n for n, doc in enumerate(ids) if doc in correct]


@pytest.mark.parametrize("granularity", ["turn", "session"])
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_graded_documents_are_the_ones_upstreams_ids_call_evidence(granularity: Granularity, data) -> None:
    question = data.draw(_questions(upstream_ids=True))
    documents = retrieval_documents(question, granularity)
    upstream = set(correct_ids([d.id for d in documents]))
    assert _graded_positions(question, granularity) == [n for n, d in enumerate(documents) if d.id in upstream]


@pytest.mark.parametrize("granularity", ["turn", "session"])
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_without_upstreams_ids_a_document_is_evidence_when_a_turn_it_holds_is(granularity: Granularity,
                                                                               data) -> None:
    """A session holds its turns; a user turn's document holds the turn and its reply (not a second user turn)."""
    question = data.draw(_questions(upstream_ids=False))
    documents = retrieval_documents(question, granularity)

    def holds(document) -> tuple:
        first, *rest = document.value_turns
        return (first, *(t for t in rest if t.role != first.role)) if granularity == "turn" else document.value_turns

    marked = [n for n, d in enumerate(documents) if d.value_turns and any(t.has_answer for t in holds(d))]
    assert _graded_positions(question, granularity) == marked


def test_evidence_a_ranking_left_out_counts_as_missed_not_as_no_evidence() -> None:
    graded = grade_ranking("plugin", MemoryContext(ranked_ids=("filler_x#0",)), THREE, VIEW)
    assert graded.corpus == ("filler_x#0", "answer_a#1", "filler_y#2") and graded.correct == ("answer_a#1",)
    metrics = json.loads(retrieval_record(graded, THREE, 1))["metrics"]
    assert metrics["recall_any@1"] == metrics["recall_all@50"] == 0.0


@pytest.mark.parametrize(("context", "named"), [
    (MemoryContext(ranked_ids="answer_a#1"), "ranked_ids must be a sequence of str ids"),  # type: ignore[arg-type]
    (MemoryContext(ranked_ids=("d",), documents={"d": "answer_a#1:0"}),  # type: ignore[dict-item]
     "documents must map each document id to a tuple of turn ids"),
    (MemoryContext(memory="x", detail=["hits"]), "detail must be a mapping"),  # type: ignore[arg-type]
    (MemoryContext(messages=({"content": "x"},)), "messages must be mappings with a role and a content"),
])
def test_a_malformed_context_is_named_before_the_actor_is_paid(context: MemoryContext, named: str) -> None:
    with pytest.raises(TypeError, match=named):
        as_context(context)


def test_a_systems_own_timeout_stays_its_error_and_the_runs_is_named() -> None:
    import asyncio

    from om_eval.bench.seam import system_call

    async def own_timeout() -> None:
        raise TimeoutError("the vector store did not answer")

    async def slow() -> None:
        await asyncio.sleep(5)

    with pytest.raises(TimeoutError, match="vector store"):
        asyncio.run(system_call(own_timeout(), system="plugin", what="ingest"))
    with pytest.raises(TimeoutError, match="vector store"):
        asyncio.run(system_call(own_timeout(), system="plugin", what="ingest", timeout=10))
    with pytest.raises(SeamError, match=r"context\(\) took longer than run.question_timeout_s=0.05 s"):
        asyncio.run(system_call(slow(), system="plugin", what="context", timeout=0.05))


def test_the_question_is_found_whatever_its_case_spacing_and_role() -> None:
    spaced = MemoryContext(messages=({"role": "system", "content": "Q: where  do I\nLIVE?"},))
    assert actor_input(spaced, QUESTION, WordCounter())[0][0]["role"] == "system"


_TEXT = st.text(st.sampled_from("aAbßSs \t\n\u00a0\u2028\u0130i\u0307?"), max_size=12)


@settings(max_examples=400, deadline=None)
@given(before=_TEXT, question_text=_TEXT, after=_TEXT, elsewhere=_TEXT)
def test_the_verbatim_shortcut_finds_the_question_exactly_when_the_plain_comparison_does(
        before: str, question_text: str, after: str, elsewhere: str) -> None:
    from om_eval.bench.seam import _plain, asks

    for content in (before + question_text + after, elsewhere):
        assert asks(content, question_text) == (_plain(question_text) in _plain(content))


def test_a_system_that_traces_nothing_still_lists_the_evidence_turns() -> None:
    from om_eval.bench.seam import untraced

    (trace,) = untraced(QUESTION)
    assert (trace.session_index, trace.turn_index, trace.status) == (0, 0, "not_traced")
    assert trace.excerpt == "I moved to Lisbon."
