"""Differential tests against the LongMemEval repository itself, read at run time from a local clone.

Set ``LONGMEMEVAL_REPO`` to a clone of xiaowu0162/LongMemEval (its work tree, or a git directory holding the pinned
commit); without it these tests skip. Nothing of upstream is shipped here: ``src/retrieval/eval_utils.py`` is run
as it is (only ``np.asfarray``, which numpy 2 removed, is given back as numpy 1 defined it), and from
``src/retrieval/run_retrieval.py`` only the function ``process_item_flat_index`` is compiled (the module imports
torch, transformers and openai). Both files are checked against their sha256 at the pinned commit.
"""

from __future__ import annotations

import ast
import hashlib
import math
import os
import subprocess
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.bench.judging.official_templates import PINNED_COMMIT
from om_eval.bench.retrieval import (
    Granularity,
    correct_ids,
    evaluate_retrieval,
    evaluate_retrieval_turn2session,
    retrieval_documents,
)
from om_eval.data.loader import question_from_record
from om_eval.data.records import HaystackSession, Question, Turn
from om_eval.data.synth import generate, mini_fixture_path

ENV = "LONGMEMEVAL_REPO"
EVAL_UTILS = "src/retrieval/eval_utils.py"
RUN_RETRIEVAL = "src/retrieval/run_retrieval.py"
#: sha256 of each file at PINNED_COMMIT (9e0b455).
PINNED_SHA256 = {
    EVAL_UTILS: "c98b8d1096877a15aa755c9de44fe33c195298466a2eb6f3c0f9f6bde8c72349",
    RUN_RETRIEVAL: "efd7fc5969a904717741fadca3c7dc73611ddbb2aaf3ef33117ebb6943b3e346",
}


def _candidates(root: Path, relative: str) -> list[tuple[str, bytes]]:
    found = []
    if (root / relative).is_file():
        found.append((str(root / relative), (root / relative).read_bytes()))
    git = ["git", f"--git-dir={root}"] if (root / "HEAD").is_file() else ["git", "-C", str(root)]
    shown = subprocess.run([*git, "show", f"{PINNED_COMMIT}:{relative}"], capture_output=True, check=False)
    if shown.returncode == 0:
        found.append((f"{root} @ {PINNED_COMMIT[:7]}", shown.stdout))
    return found


def _upstream_source(relative: str) -> tuple[str, str]:
    where = os.environ.get(ENV, "").strip()
    if not where:
        pytest.skip(f"set {ENV}=<a clone of xiaowu0162/LongMemEval or its git dir> to compare with upstream")
    root = Path(where).expanduser()
    if not root.is_dir():
        pytest.fail(f"{ENV}={where} is not a directory")
    found = _candidates(root, relative)
    for origin, data in found:
        if hashlib.sha256(data).hexdigest() == PINNED_SHA256[relative]:
            return origin, data.decode()
    pytest.fail(f"{ENV}={where}: no {relative} with the sha256 of commit {PINNED_COMMIT} "
                f"(looked at: {', '.join(origin for origin, _ in found) or 'nothing'})")


class _Numpy1:
    """numpy, plus ``asfarray`` as numpy 1 defined it (``asarray(a, float64)``): upstream's ``dcg`` calls it."""

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    @staticmethod
    def asfarray(a: Any) -> Any:
        return np.asarray(a, dtype=np.float64)


@pytest.fixture(scope="module")
def eval_utils() -> dict[str, Any]:
    origin, source = _upstream_source(EVAL_UTILS)
    namespace: dict[str, Any] = {"__name__": "longmemeval_eval_utils"}
    exec(compile(source, origin, "exec"), namespace)
    if not hasattr(np, "asfarray"):
        namespace["np"] = _Numpy1()
    return namespace


@pytest.fixture(scope="module")
def process_item_flat_index() -> Callable[..., tuple[list[str], list[str], list[Any]]]:
    origin, source = _upstream_source(RUN_RETRIEVAL)
    [function] = [node for node in ast.parse(source).body
                  if isinstance(node, ast.FunctionDef) and node.name == "process_item_flat_index"]
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module(body=[function], type_ignores=[]), origin, "exec"), namespace)
    upstream: Callable[..., tuple[list[str], list[str], list[Any]]] = namespace["process_item_flat_index"]
    return upstream


# ------------------------------------------------------------------------------------------------ metrics

_session_ids = st.sampled_from(["answer_a1_1", "answer_a1_2", "noans_a1_1", "x_3", "ultrachat_9", "plain", "_"])
_turn_ids = st.builds(lambda session, turn: f"{session}_{turn}", _session_ids, st.integers(1, 7))
_ids = st.one_of(_turn_ids, _session_ids, st.text(alphabet="answer_01", max_size=8))


@st.composite
def _retrieval_cases(draw: st.DrawFn) -> tuple[list[int], list[str], list[str], int]:
    corpus_ids = draw(st.lists(_ids, min_size=1, max_size=25))
    rankings = draw(st.permutations(range(len(corpus_ids))))
    by_rule = sorted({i for i in corpus_ids if "answer" in i})
    correct = draw(st.just(by_rule) | st.lists(st.sampled_from(corpus_ids) | _ids, max_size=5))
    k = draw(st.integers(1, len(corpus_ids) + 3))
    return list(rankings), correct, corpus_ids, k


def _assert_same(ours: tuple[float, float, float], theirs: tuple[Any, Any, Any]) -> None:
    assert ours[:2] == tuple(float(x) for x in theirs[:2])
    assert math.isclose(ours[2], float(theirs[2]), rel_tol=1e-9, abs_tol=0.0), (ours, theirs)


@settings(max_examples=600, deadline=None)
@given(case=_retrieval_cases())
def test_metrics_equal_upstreams(eval_utils: dict[str, Any], case: tuple[list[int], list[str], list[str], int]) -> None:
    rankings, correct, corpus_ids, k = case
    _assert_same(evaluate_retrieval(rankings, correct, corpus_ids, k),
                 eval_utils["evaluate_retrieval"](rankings, correct, corpus_ids, k=k))
    _assert_same(evaluate_retrieval_turn2session(rankings, correct, corpus_ids, k),
                 eval_utils["evaluate_retrieval_turn2session"](np.array(rankings), correct, corpus_ids, k=k))


# ---------------------------------------------------------------------------------------------- documents

_content = st.text(alphabet="ab ", max_size=6)


@st.composite
def _questions(draw: st.DrawFn) -> Question:
    sessions = []
    for index in range(draw(st.integers(1, 5))):
        session_id = draw(st.sampled_from(["answer_a1_1", "answer_a1_2", "x_3", "ultrachat_9", "plain"]))
        evidence = "answer" in session_id  # upstream requires has_answer on every turn of these
        turns = tuple(
            Turn(draw(st.sampled_from(["user", "assistant"])), draw(_content),
                 draw(st.booleans() if evidence else st.none() | st.booleans()))
            for _ in range(draw(st.integers(0, 5)))
        )
        sessions.append(HaystackSession("q", index, session_id, datetime(2023, 5, 1), "d", turns, evidence))
    return Question("q", "multi-session", "what?", "a", datetime(2023, 5, 2), "d", tuple(sessions), ())


def _raw_session(session: HaystackSession) -> list[dict[str, Any]]:
    return [{"role": t.role, "content": t.content, **({} if t.has_answer is None else {"has_answer": t.has_answer})}
            for t in session.turns]


def _assert_same_documents(question: Question, granularity: Granularity, upstream: Callable[..., Any]) -> None:
    texts, ids = [], []
    for session in question.sessions:
        corpus, corpus_ids, _ = upstream(_raw_session(session), granularity, session.session_id, session.date_text)
        texts += corpus
        ids += corpus_ids
    documents = retrieval_documents(question, granularity)
    assert [d.id for d in documents] == ids
    assert [d.text for d in documents] == texts
    assert correct_ids(ids) == sorted(set(doc_id for doc_id in ids if "answer" in doc_id))


@pytest.mark.parametrize("granularity", ["turn", "session"])
@settings(max_examples=300, deadline=None)
@given(question=_questions())
def test_documents_equal_upstreams(process_item_flat_index: Callable[..., Any], granularity: Granularity,
                                   question: Question) -> None:
    _assert_same_documents(question, granularity, process_item_flat_index)


@pytest.mark.parametrize("granularity", ["turn", "session"])
def test_documents_of_packaged_and_synthetic_data_equal_upstreams(process_item_flat_index: Callable[..., Any],
                                                                  granularity: Granularity) -> None:
    import json

    records = json.loads(Path(mini_fixture_path()).read_text()) + generate(size="small", seed=1)
    for record in records:
        _assert_same_documents(question_from_record(record), granularity, process_item_flat_index)
