"""BEAM's arithmetic: rubric scores with upstream's int() truncation, the event-ordering score with tau-b (NaN
included), the per-chat means upstream's report takes; checked against scipy and, given a clone, upstream's code."""

from __future__ import annotations

import ast
import hashlib
import json
import math
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.bench.beam import (
    ABILITIES,
    align_events,
    beam_means,
    event_ordering_score,
    kendall_tau_b,
    ordering_metrics,
    question_score,
    rubric_score,
)
from om_eval.bench.judging.beam_templates import COMMIT, METRICS_FILE

ITEM = st.sampled_from([0.0, 0.5, 1.0])
EVENTS = st.lists(st.sampled_from(list("abcdefgh")), min_size=1, max_size=7)
#: scipy warns when a vector is too short for tau; the NaN it returns is what these tests compare.
pytestmark = pytest.mark.filterwarnings("ignore:One or more sample arguments is too small")


def same_letter(reference: str, system: str) -> bool:
    return reference.lower() == system.lower()


def test_upstream_rounding_counts_a_half_as_nothing_except_for_event_ordering() -> None:
    assert rubric_score([1.0, 0.5], "information_extraction") == 0.5
    assert rubric_score([1.0, 0.5], "information_extraction", "exact") == 0.75
    assert rubric_score([1.0, 0.5], "event_ordering") == 0.75
    assert rubric_score([0.5, 0.5, 0.5], "summarization") == 0.0


@pytest.mark.parametrize("bad", [([], "abstention", "upstream"), ([1.0], "memory", "upstream"),
                                 ([1.0], "abstention", "floor")])
def test_rubric_score_refuses_what_upstream_cannot_score(bad: tuple[Any, str, str]) -> None:
    with pytest.raises(ValueError):
        rubric_score(*bad)


@given(st.lists(ITEM, min_size=1, max_size=9), st.sampled_from(ABILITIES))
def test_exact_rounding_never_scores_below_upstream(items: list[float], ability: str) -> None:
    assert rubric_score(items, ability, "exact") >= rubric_score(items, ability, "upstream")
    assert 0.0 <= rubric_score(items, ability) <= 1.0


def test_a_perfect_order_scores_one_and_a_reversed_one_zero() -> None:
    reference = ["alpha", "beta", "gamma"]
    perfect = event_ordering_score(reference, ["ALPHA", "beta", "Gamma"], same_letter)
    assert perfect == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "tau_norm": 1.0, "final_score": 1.0}
    reversed_ = event_ordering_score(reference, ["gamma", "beta", "alpha"], same_letter)
    assert reversed_["f1"] == 1.0 and reversed_["tau_norm"] == 0.0 and reversed_["final_score"] == 0.0


def test_a_one_line_answer_has_no_tau_and_no_final_score() -> None:
    scores = event_ordering_score(["alpha"], ["alpha"], same_letter)
    assert scores["f1"] == 1.0
    assert math.isnan(scores["tau_norm"]) and math.isnan(scores["final_score"])


def test_each_reference_item_is_matched_once_and_blank_lines_count_as_items() -> None:
    canonical = align_events(["a", "b"], ["a", "A", "", "b"], same_letter)
    assert canonical == ["a", "A", "", "b"]
    scores = ordering_metrics(["a", "b"], canonical)
    assert scores["precision"] == 0.5 and scores["recall"] == 1.0


def test_the_question_score_is_tau_norm_for_event_ordering_and_the_rubric_score_otherwise() -> None:
    ordering = {"tau_norm": 0.25, "final_score": 0.1}
    assert question_score("event_ordering", [1.0, 1.0], ordering) == 0.25
    assert question_score("knowledge_update", [1.0, 0.5], None) == 0.5
    with pytest.raises(ValueError):
        question_score("event_ordering", [1.0], None)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=0, max_size=9).flatmap(
    lambda x: st.tuples(st.just(x), st.lists(st.integers(1, 6), min_size=len(x), max_size=len(x)))))
def test_tau_b_is_scipys_to_the_last_bit(pair: tuple[list[int], list[int]]) -> None:
    kendalltau = pytest.importorskip("scipy.stats").kendalltau
    x, y = pair
    ours = kendall_tau_b(x, y)
    theirs = float(kendalltau(x, y, variant="b").statistic) if len(x) else math.nan
    assert (math.isnan(ours) and math.isnan(theirs)) or ours == theirs


def test_means_are_taken_per_chat_then_over_chats_and_nan_is_counted_apart() -> None:
    rows = [{"question_type": "knowledge_update", "haystack_id": "c1", "score": 1.0},
            {"question_type": "knowledge_update", "haystack_id": "c1", "score": 1.0},
            {"question_type": "knowledge_update", "haystack_id": "c1", "score": 1.0},
            {"question_type": "knowledge_update", "haystack_id": "c2", "score": 0.0},
            {"question_type": "event_ordering", "haystack_id": "c1", "score": math.nan},
            {"question_type": "event_ordering", "haystack_id": "c1", "score": 0.5},
            {"question_type": "summarization", "haystack_id": "c1", "score": None}]
    means = beam_means(rows)
    update = means["per_type"]["knowledge_update"]
    assert update["mean"] == 0.5 and update["micro"] == 0.75 and update["chats"] == 2
    assert means["per_type"]["event_ordering"] == {"mean": 0.5, "micro": 0.5, "n": 1, "nan": 1, "chats": 1}
    assert means["per_type"]["summarization"]["mean"] is None
    assert means["nan"] == 1 and means["n"] == 5
    assert means["overall"] == pytest.approx((0.5 + 0.5) / 2)


# ------------------------------------------------------------------------------------------- against upstream

UPSTREAM = os.environ.get("BEAM_UPSTREAM_DIR")
needs_upstream = pytest.mark.skipif(
    not UPSTREAM, reason="set BEAM_UPSTREAM_DIR to a clone of mohammadtavakoli78/BEAM (its work tree or git dir, "
                         "commit b2a3ee8) to compare with upstream's compute_metrics.py")


def _upstream_source() -> tuple[str, str]:
    """compute_metrics.py from the clone's work tree, or from its git dir at the pinned commit; sha256-checked."""
    root = Path(str(UPSTREAM)).expanduser()
    if not root.is_dir():
        pytest.fail(f"BEAM_UPSTREAM_DIR={UPSTREAM} is not a directory")
    found = []
    if (root / METRICS_FILE.path).is_file():
        found.append((str(root / METRICS_FILE.path), (root / METRICS_FILE.path).read_bytes()))
    git = ["git", f"--git-dir={root}"] if (root / "HEAD").is_file() else ["git", "-C", str(root)]
    shown = subprocess.run([*git, "show", f"{COMMIT}:{METRICS_FILE.path}"], capture_output=True, check=False)
    if shown.returncode == 0:
        found.append((f"{root} @ {COMMIT[:7]}", shown.stdout))
    for origin, data in found:
        if hashlib.sha256(data).hexdigest() == METRICS_FILE.sha256:
            return origin, data.decode("utf-8")
    pytest.fail(f"BEAM_UPSTREAM_DIR={UPSTREAM}: no {METRICS_FILE.path} with the sha256 of commit {COMMIT[:7]} "
                f"(looked at: {', '.join(o for o, _ in found) or 'nothing'})")


def _upstream_functions() -> dict[str, Any]:
    """Upstream's scoring functions, defined alone from its compute_metrics.py (its imports need models and keys)."""
    pytest.importorskip("scipy")
    from scipy.stats import kendalltau

    path, text = _upstream_source()
    tree = ast.parse(text)
    wanted = {"llm_equivalence", "align_with_llm", "event_ordering_score", "parse_json_response",
              "evaluate_information_extraction", "evaluate_event_ordering", "evaluate_abstention"}
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in wanted]
    namespace: dict[str, Any] = {"kendalltau": kendalltau, "List": list, "Tuple": tuple, "json": json,
                                 "re": __import__("re"), "repair_json": lambda text: text,
                                 "unified_llm_judge_base_prompt": "<rubric_item>|<llm_response>",
                                 "extract_facts": lambda **_: []}
    exec(compile(ast.Module(body=body, type_ignores=[]), path, "exec"), namespace)
    return namespace


class _Judge:
    """Stands in for upstream's langchain model: equivalence by letters, rubric scores from a table."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores

    def invoke(self, prompt: Any) -> SimpleNamespace:
        if isinstance(prompt, list):  # the equivalence messages
            text = prompt[1]["content"]
            first = text.split("First snippet:")[1].split("\n")[0].strip()
            second = text.split("Second snippet:")[1].strip()
            return SimpleNamespace(content="YES" if same_letter(first, second) else "NO")
        item = prompt.split("|")[0]
        return SimpleNamespace(content=json.dumps({"score": self.scores[item], "reason": "table"}))


@needs_upstream
@settings(max_examples=200, deadline=None)
@given(EVENTS, EVENTS)
def test_event_ordering_equals_upstreams(reference: list[str], system: list[str]) -> None:
    upstream = _upstream_functions()
    reference = list(dict.fromkeys(reference))
    theirs = upstream["event_ordering_score"](reference, system, "llm", _Judge({}))
    ours = event_ordering_score(reference, system, same_letter)
    for key in ("precision", "recall", "f1", "tau_norm", "final_score"):
        assert (math.isnan(ours[key]) and math.isnan(theirs[key])) or ours[key] == theirs[key], key


@needs_upstream
@settings(max_examples=100, deadline=None)
@given(st.lists(ITEM, min_size=1, max_size=6), st.sampled_from(["information_extraction", "abstention",
                                                                "event_ordering"]))
def test_rubric_scores_equal_upstreams(items: list[float], ability: str) -> None:
    upstream = _upstream_functions()
    rubric = [f"criterion {i}" for i in range(len(items))]
    judge = _Judge(dict(zip(rubric, items, strict=True)))
    theirs = upstream[f"evaluate_{ability}"](rubric, "a\nb", "question?", judge)
    assert rubric_score(items, ability) == theirs["llm_judge_score"]


def test_a_score_is_recomputed_from_the_judges_reply() -> None:
    from om_eval.bench.beam import score_of_reply

    reply = json.dumps({"items": [{"score": 1.0}, {"score": 0.5}], "rounding": "upstream"})
    assert score_of_reply("temporal_reasoning", reply) == 0.5
    assert score_of_reply("temporal_reasoning", reply.replace("upstream", "exact")) == 0.75
    ordering = json.dumps({"items": [{"criterion": "a", "score": 1.0}], "rounding": "upstream",
                           "ordering": {"tau_norm": 0.9, "f1": 1.0, "aligned": ["a"]}})  # a stored 0.9 is not read
    assert math.isnan(score_of_reply("event_ordering", ordering))  # type: ignore[arg-type]
    assert score_of_reply("summarization", "yes") is None
