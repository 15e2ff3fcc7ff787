"""Answering through the memory seam: the harness's layout, the context column, a retrieval system's recall@k."""

from __future__ import annotations

import json

import pytest

from om_eval.bench.retrieval import evaluate_retrieval
from om_eval.memory.answering import actor_input, as_context, house_messages, retrieval_record
from om_eval.memory.system import MemoryContext
from tests.memory.helpers import WordCounter, question, session

QUESTION = question(session(0, "answer_a", ("user", "I moved to Lisbon.", True)), text="Where do I live?")


def test_a_text_block_is_laid_out_between_the_instructions_and_the_question() -> None:
    messages = house_messages("<observations>\n- lives in Lisbon\n</observations>", QUESTION)
    assert [m["role"] for m in messages] == ["system", "system", "user"]
    assert messages[1]["content"].startswith("<observations>")
    assert messages[2]["content"] == f"Current Date: {QUESTION.question_date_text}\nQuestion: Where do I live?"
    assert [m["role"] for m in house_messages(None, QUESTION)] == ["system", "user"]


def test_the_context_column_counts_the_memory_only() -> None:
    messages, tokens = actor_input(MemoryContext(memory="a b c"), QUESTION, WordCounter())
    assert tokens == 3 and len(messages) == 3
    whole = MemoryContext(messages=({"role": "user", "content": "read: x y. Q?"},), injected="x y.")
    assert actor_input(whole, QUESTION, WordCounter()) == ([{"role": "user", "content": "read: x y. Q?"}], 2)
    assert actor_input(MemoryContext(), QUESTION, WordCounter())[1] == 0


def test_a_plugin_may_return_plain_text() -> None:
    assert as_context("- a") == MemoryContext(memory="- a")
    with pytest.raises(TypeError, match="return a str or a MemoryContext"):
        as_context(["- a"])  # type: ignore[arg-type]


def test_the_retrieval_record_scores_the_ranking_as_longmemeval_does() -> None:
    context = MemoryContext(ranked_ids=("d2", "answer_1", "d3"), correct_ids=("answer_1",),
                            corpus_ids=("answer_1", "d2", "d3"))
    record = json.loads(retrieval_record(context, QUESTION, 10))
    assert record["k"] == 10 and record["corpus"] == 3 and record["ranked"] == ["d2", "answer_1", "d3"]
    assert record["metrics"]["recall_any@1"] == 0.0 and record["metrics"]["recall_any@3"] == 1.0
    expected = evaluate_retrieval([1, 0, 2], ["answer_1"], ["answer_1", "d2", "d3"], 5)
    assert (record["metrics"]["recall_any@5"], record["metrics"]["recall_all@5"],
            record["metrics"]["ndcg_any@5"]) == expected


def test_abstention_and_non_retrieval_answers_keep_no_metrics() -> None:
    abstention = question(session(0, "answer_a", ("user", "hi", True)), qid="q1_abs")
    context = MemoryContext(ranked_ids=("answer_a",), correct_ids=("answer_a",), corpus_ids=("answer_a",))
    assert "metrics" not in json.loads(retrieval_record(context, abstention, 5))
    assert retrieval_record(MemoryContext(memory="x"), QUESTION, None) is None
