"""The baseline readers' layout: a session block, the truncation budget and the end it keeps, the options."""

from __future__ import annotations

import json

import pytest

from om_eval.bench.baseline import BaselineConfig, baseline_from, render_session, truncate_blocks
from om_eval.data.loader import dataset_from_records
from om_eval.om.config import ConfigError
from om_eval.om.tokens import make_counter
from om_eval.testing.scripted.model import ScriptedModel
from tests.systems.test_readers import lessons_record


@pytest.fixture(scope="module")
def question():
    return dataset_from_records([lessons_record()], name="baseline-test").questions[0]


def test_json_sessions_hold_the_turns_as_a_json_list(question) -> None:
    block = render_session(2, question.sessions[1], "json")
    turns = json.loads(block.split("Messages:\n", 1)[1])
    assert turns == [{"role": "user", "content": "I started cello lessons this spring."},
                     {"role": "assistant", "content": "Lovely instrument {question} to learn."}]
    assert block.startswith("\n### Conversation 2\nDate: 2023/05/10 (Wed) 18:30\n")
    nl = render_session(1, question.sessions[1], "nl")
    assert "\n\nuser: I started cello lessons this spring.\n\nassistant: Lovely" in nl


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


def test_the_scripted_model_reads_a_history_inside_one_prompt() -> None:
    prompt = ('Earlier:\n[{"role": "user", "content": "My sister Ada moved to Lisbon."}, {"role": "assistant", '
              '"content": "Nice!"}]\n\nuser: I adopted a grey cat.\n\nassistant: Congratulations.\n\n'
              "Current Date: 2023/06/01 (Thu) 09:00\nQuestion: Where did my sister Ada move?\nAnswer:")
    assert ScriptedModel().reply([{"role": "user", "content": prompt}], stage="actor").text == (
        "My sister Ada moved to Lisbon.")
    prompt = prompt.replace("Where did my sister Ada move?", "What colour is my cat?")
    assert ScriptedModel().reply([{"role": "user", "content": prompt}], stage="actor").text == "I adopted a grey cat."
