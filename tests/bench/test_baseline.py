"""Baseline readers: the prompt layout, the oracle's session choice, the truncation budget and the end it keeps."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest

from om_eval.bench.baseline import (
    IN_READER_PROMPT,
    TRUNCATED_AWAY,
    BaselineConfig,
    baseline_from,
    read_and_judge,
    reader_prompt,
    reader_sessions,
    render_session,
    trace_reader_evidence,
    truncate_blocks,
)
from om_eval.bench.judging.judge import Judge
from om_eval.bench.pipeline import unpack_messages
from om_eval.data import load_dataset, mini_fixture_path
from om_eval.data.loader import dataset_from_records
from om_eval.llm.cache import ResponseCache
from om_eval.llm.client import LLMClient
from om_eval.llm.ledger import Ledger
from om_eval.om.config import ConfigError, ModelSettings
from om_eval.om.tokens import CharRatioCounter, make_counter
from om_eval.testing.scripted.model import ScriptedModel
from tests.golden import assert_golden

SCRIPTED = ModelSettings(model="scripted/om-eval", temperature=0.0, max_output_tokens=None)


def _record() -> dict:
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
    return dataset_from_records([_record()], name="baseline-test").questions[0]


@pytest.fixture(scope="module")
def counter():
    return make_counter("tiktoken")


def test_sessions_come_oldest_first_with_has_answer_removed(question, counter) -> None:
    prompt = reader_prompt(question, BaselineConfig(reader="full_context"), counter)
    (message,) = prompt.messages
    assert message["role"] == "user" and "has_answer" not in message["content"]
    dates = ["2023/05/02 (Tue) 08:15", "2023/05/10 (Wed) 18:30", "2023/05/20 (Sat) 10:00"]
    positions = [message["content"].index(d) for d in dates]
    assert positions == sorted(positions)
    assert [s.session_id for s in prompt.sessions] == ["sharegpt_Ab12Cd_0", "answer_bx000001_1", "ultrachat_900001"]
    # The current date and the question close the message; braces in a chat are left alone.
    assert message["content"].endswith("Current Date: 2023/06/01 (Thu) 09:00\nQuestion: Which lessons did I start "
                                       "this spring?\nAnswer:")
    assert "Lovely instrument {question} to learn." in message["content"]
    assert not prompt.truncated and prompt.history_tokens == prompt.shown_tokens


def test_json_sessions_hold_the_turns_as_a_json_list(question) -> None:
    block = render_session(2, question.sessions[1], "json")
    turns = json.loads(block.split("Messages:\n", 1)[1])
    assert turns == [{"role": "user", "content": "I started cello lessons this spring."},
                     {"role": "assistant", "content": "Lovely instrument {question} to learn."}]
    assert block.startswith("\n### Conversation 2\nDate: 2023/05/10 (Wed) 18:30\n")
    nl = render_session(1, question.sessions[1], "nl")
    assert "\n\nuser: I started cello lessons this spring.\n\nassistant: Lovely" in nl


def test_the_oracle_keeps_only_evidence_sessions(question, counter) -> None:
    assert [s.session_id for s in reader_sessions(question, "oracle")] == ["answer_bx000001_1"]
    content = reader_prompt(question, BaselineConfig(reader="oracle"), counter).messages[0]["content"]
    assert "cello" in content and "pasta" not in content and "fitted sheet" not in content
    assert content.count("### Conversation") == 1


@pytest.mark.parametrize("keep", ["start", "end"])
@pytest.mark.parametrize("estimator", ["tiktoken", "chars"])
def test_truncation_respects_the_budget_and_keeps_the_chosen_end(keep: str, estimator: str) -> None:
    counter = make_counter(estimator)
    blocks = [f"\n### Conversation {i}\nDate: d{i}\nMessages:\n" + " ".join(f"word{i}x{j}" for j in range(40)) + "\n"
              for i in range(1, 9)]
    whole = "".join(blocks)
    total = counter.count_text(whole)
    for budget in (1, 7, 50, total // 3, total - 1, total, total + 10):
        kept = truncate_blocks(blocks, budget, counter, keep)
        assert counter.count_text(kept) <= budget
        assert (whole.startswith(kept) if keep == "start" else whole.endswith(kept))
        if budget >= total:
            assert kept == whole
        else:  # little is given up: counting blocks apart may overcount by a token per boundary ("\n" + "\n")
            longer = whole[: len(kept) + 8] if keep == "start" else whole[len(whole) - len(kept) - 8:]
            assert counter.count_text(longer) > budget - len(blocks)


def test_upstream_cuts_the_newest_part_and_keep_end_cuts_the_oldest(question) -> None:
    counter = CharRatioCounter(1.0)  # one token per character: the budget is easy to reason about
    full = reader_prompt(question, BaselineConfig(reader="full_context"), counter)
    budget = full.history_tokens // 2
    config = BaselineConfig(reader="full_context", context_tokens=budget + 1 + 1000, max_tokens=1)
    assert config.history_budget == budget
    start = reader_prompt(question, config, counter)
    end = reader_prompt(question, replace(config, keep="end"), counter)
    assert start.truncated and start.shown_tokens <= budget and end.shown_tokens <= budget
    assert "fitted sheet" in start.history and "pasta" not in start.history  # the oldest session survives
    assert "pasta" in end.history and "fitted sheet" not in end.history      # the newest session survives
    traces = trace_reader_evidence(question, full, "json")
    assert [(t.session_id, t.status, t.answer_in_lines) for t in traces] == [
        ("answer_bx000001_1", IN_READER_PROMPT, True)]  # the gold answer is in the turn the reader saw


def test_a_tight_window_drops_the_evidence_and_the_trace_says_so(question) -> None:
    counter = CharRatioCounter(1.0)
    sessions = reader_sessions(question, "full_context")
    first = len(render_session(1, sessions[0], "json"))  # only the oldest (filler) session fits
    config = BaselineConfig(reader="full_context", context_tokens=first + 1 + 1000, max_tokens=1)
    prompt = reader_prompt(question, config, counter)
    assert [t.status for t in trace_reader_evidence(question, prompt, "json")] == [TRUNCATED_AWAY]


def test_rendered_prompt_golden() -> None:
    mini = load_dataset(path=mini_fixture_path()).by_id()["5ed4ff79"]
    counter = make_counter("tiktoken")
    assert_golden("baseline_full_context_json.txt",
                  reader_prompt(mini, BaselineConfig(reader="full_context"), counter).messages[0]["content"])
    assert_golden("baseline_oracle_nl.txt",
                  reader_prompt(mini, BaselineConfig(reader="oracle", format="nl"), counter).messages[0]["content"])


@pytest.mark.parametrize(("data", "message"), [
    ({"reader": "rag"}, "baseline.reader='rag' is invalid"),
    ({"reader": "oracle", "format": "yaml"}, "baseline.format='yaml' is invalid"),
    ({"reader": "oracle", "keep": "middle"}, "baseline.keep='middle' is invalid"),
    ({"reader": "oracle", "max_tokens": 0}, "baseline.max_tokens=0 is invalid"),
    ({"reader": "oracle", "context_tokens": 1200}, "leaves no room for the history"),
])
def test_bad_options_name_the_key(data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        baseline_from(data)


def test_a_missing_group_is_an_om_run() -> None:
    assert baseline_from(None) == BaselineConfig() and not BaselineConfig().enabled
    assert BaselineConfig(reader="oracle").memory_key == "baseline:oracle"
    assert BaselineConfig(reader="full_context").history_budget == 128_000 - 500 - 1000


@pytest.mark.parametrize("fmt", ["json", "nl"])
def test_the_scripted_reader_answers_from_the_sessions_and_is_judged(question, counter, tmp_path, fmt: str) -> None:
    ledger = Ledger()
    client = LLMClient(cache=ResponseCache(tmp_path / "cache")).with_ledger(ledger)
    result = asyncio.run(read_and_judge(question, BaselineConfig(reader="oracle", format=fmt), client=client,
                                        reader=SCRIPTED, judge=Judge.house(model=SCRIPTED), counter=counter))
    assert "cello lessons" in result.hypothesis and result.judge_status == "ok" and result.label is True
    assert result.observer_calls == result.reflector_calls == 0 and result.observation_tokens is None
    assert result.memory_key == "baseline:oracle"
    assert [r.stage for r in ledger.records] == ["actor", "judge"]
    (message,) = unpack_messages(result.actor_prompt)
    assert message["role"] == "user" and "### Conversation 1" in message["content"]


def test_the_scripted_model_reads_a_history_inside_one_prompt() -> None:
    prompt = ('Earlier:\n[{"role": "user", "content": "My sister Ada moved to Lisbon."}, {"role": "assistant", '
              '"content": "Nice!"}]\n\nuser: I adopted a grey cat.\n\nassistant: Congratulations.\n\n'
              "Current Date: 2023/06/01 (Thu) 09:00\nQuestion: Where did my sister Ada move?\nAnswer:")
    assert ScriptedModel().reply([{"role": "user", "content": prompt}], stage="actor").text == (
        "My sister Ada moved to Lisbon.")
    prompt = prompt.replace("Where did my sister Ada move?", "What colour is my cat?")
    assert ScriptedModel().reply([{"role": "user", "content": prompt}], stage="actor").text == "I adopted a grey cat."
