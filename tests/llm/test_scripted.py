"""The scripted offline model: stage detection, behaviours, faults."""

from __future__ import annotations

import asyncio
import tracemalloc
from datetime import datetime

import pytest

from om_eval.om.config import ModelSettings
from om_eval.om.observer import ObserverRequest, format_messages, render_observer_request
from om_eval.om.parsing import parse_observer_output, parse_reflector_output
from om_eval.om.records import Message
from om_eval.om.reflector import render_reflector_request
from om_eval.testing.scripted.model import ScriptedModel, ScriptedModelError, compression_level_of, detect_stage

SETTINGS = ModelSettings(model="scripted/test")
WHEN = datetime(2025, 5, 2, 8, 30)


def observer_messages() -> list[dict[str, str]]:
    history = format_messages([
        Message("m1", "t", "user", "I moved to Ghent last month. Where can I learn Dutch?", WHEN),
        Message("m2", "t", "assistant", "Congratulations on the move! Try the city's evening classes.", WHEN),
    ])
    return [{"role": "system", "content": "observer system"}, *render_observer_request(ObserverRequest(history))]


def complete(model: ScriptedModel, messages: list[dict[str, str]], stage: str) -> str:
    return asyncio.run(model.complete(messages, stage=stage, settings=SETTINGS)).text


def test_stage_detection_by_prompt_headings() -> None:
    assert detect_stage(observer_messages()) == "observer"
    assert detect_stage([{"role": "user", "content": render_reflector_request("* 🔴 x", 0)}]) == "reflector"
    assert detect_stage([{"role": "user", "content": "Question: where do I live?"}]) == "actor"


def test_a_history_sent_as_text_parts_is_read_like_one_text() -> None:
    """``prompt=mastra_exact`` sends a release's history message as one text part per message."""
    system, task, history = observer_messages()
    heading, _, body = history["content"].partition("\n\n")
    blocks = body.split("\n\n---\n\n")
    parts = [heading + "\n\n", blocks[0], "\n\n---\n\n", blocks[1]]
    split = [system, task, {"role": "user", "content": [{"type": "text", "text": p} for p in parts]}]
    assert detect_stage(split) == "observer"
    assert complete(ScriptedModel(), split, "observer") == complete(ScriptedModel(), observer_messages(), "observer")


def test_observer_output_parses_and_is_dated() -> None:
    parsed = parse_observer_output(complete(ScriptedModel(), observer_messages(), "observer"))
    assert parsed.observations.splitlines() == [
        "Date: May 2, 2025",
        "* 🔴 (08:30) User stated: I moved to Ghent last month.",
        "* 🟡 (08:30) User asked: Where can I learn Dutch?",
        "* 🟡 (08:30) Assistant replied: Congratulations on the move!",
    ]
    assert parsed.current_task and parsed.suggested_response


@pytest.mark.parametrize("level", [0, 1, 2, 3, 4])
def test_reflector_compresses_more_at_higher_levels(level: int) -> None:
    observations = "Date: May 2, 2025\n" + "\n".join(
        f"* 🔴 (08:{i:02d}) User stated a long fact number {i} about their garden and the roses in it today"
        for i in range(9)
    ) + "\n* 🟡 (09:00) Assistant replied with many details about pruning roses in spring and autumn"
    request = render_reflector_request(observations, level)
    assert compression_level_of(request) == level
    out = parse_reflector_output(complete(ScriptedModel(), [{"role": "user", "content": request}], "reflector"))
    longest = max(len(line.split()) for line in out.observations.splitlines() if line.startswith("*"))
    assert longest <= 3 + {0: 18, 1: 13, 2: 9, 3: 6, 4: 4}[level]
    assert ("🟡" in out.observations) == (level < 3)


def test_actor_answers_from_the_best_matching_line() -> None:
    messages = [
        {"role": "system",
         "content": "* 🔴 (08:30) User stated: I moved to Ghent last month.\n* 🔴 (08:31) User has a cat."},
        {"role": "user", "content": "Current Date: 2025/06/01\nQuestion: Which city did I move to?"},
    ]
    assert complete(ScriptedModel(), messages, "actor") == "User stated: I moved to Ghent last month."
    assert complete(ScriptedModel(), messages[-1:], "actor").startswith("I don't know")


def test_faults_apply_in_order_then_normal_behaviour() -> None:
    model = ScriptedModel(faults={"observer": ["error", "missing_tags", "empty"]})
    with pytest.raises(ScriptedModelError):
        complete(model, observer_messages(), "observer")
    assert "<observations>" not in complete(model, observer_messages(), "observer")
    assert complete(model, observer_messages(), "observer") == ""
    assert complete(model, observer_messages(), "observer").startswith("<observations>")
    assert [c.fault for c in model.calls] == ["error", "missing_tags", "empty", None]


def test_unknown_fault_is_rejected() -> None:
    with pytest.raises(ValueError, match="scripted fault 'slow' for observer is unknown"):
        ScriptedModel(faults={"observer": ["slow"]})


@pytest.mark.parametrize(
    ("label", "reference", "response", "expected"),
    [
        ("Reference answer", "Toby", "Your dog is called Toby.", "yes"),
        ("Reference answer", "Toby", "I don't know.", "no"),
        ("Correct Answer", "3", "You bought 3 plants.", "yes"),
        ("Correct Answer", "3", "You bought 13 plants.", "no"),
        ("Explanation", "The user never mentioned cats.", "I don't know: nothing in my memory answers that.", "yes"),
        ("Explanation", "The user never mentioned cats.", "You have two cats.", "no"),
    ],
)
def test_judge_prompts_get_yes_or_no(label: str, reference: str, response: str, expected: str) -> None:
    prompt = (f"Grade the reply.\n\nQuestion: Tell me.\n\n{label}: {reference}\n\nResponse: {response}"
              "\n\nRight? yes or no")
    messages = [{"role": "user", "content": prompt}]
    assert detect_stage(messages) == "judge"
    assert complete(ScriptedModel(), messages, "judge") == expected


def test_only_recent_calls_are_kept_in_full_but_all_are_counted() -> None:
    # Regression: the shared scripted model kept every prompt of a 500-question run (1.68 GB peak RSS).
    question = {"role": "user", "content": "Question: where do I live?"}
    model = ScriptedModel()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(400):  # a fresh 20 kB prompt each time, as a real run sends
            complete(model, [{"role": "system", "content": f"{i} " + "x" * 20_000}, question], "actor")
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(model.calls) == 64 and model.call_counts["actor"] == 400 and model.total_calls == 400
    assert retained < 3_000_000  # 64 prompts of 20 kB, not 400 (8 MB)
    everything = ScriptedModel(history=None)
    for _ in range(100):
        complete(everything, [question], "actor")
    assert len(everything.calls) == 100
    silent = ScriptedModel(history=0)
    complete(silent, [question], "actor")
    assert not silent.calls and silent.call_counts == {"actor": 1}
    with pytest.raises(ValueError, match="history=-1 is invalid"):
        ScriptedModel(history=-1)
