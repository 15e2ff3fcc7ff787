"""``memory=mem0``: mem0's own code, offline, through the run's services: a non-empty memory for every question,
dated as the conversation was, nothing paid twice, and a build that stores nothing reported, never silent."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

os.environ["MEM0_TELEMETRY"] = "False"  # before mem0's first import, which reads it
pytest.importorskip("mem0", reason="the mem0 extra is not installed (pip install 'om-eval[mem0]')")

from om_eval.systems.mem0 import _SESSION_DATE, Mem0System, _mem0, mem0_offline_reply
from tests.locomo_shaped import write_locomo_shaped
from tests.runs import run_and_read

pytestmark = pytest.mark.integration  # a library's whole pipeline per question: seconds each


def run(results: Path, *overrides: str, cache: Path | None = None) -> tuple[list[dict[str, Any]], dict[str, int], str]:
    return run_and_read(results, "memory=mem0", *overrides, cache=cache)


def test_every_question_is_answered_from_a_non_empty_memory_and_a_rerun_pays_nothing(tmp_path: Path) -> None:
    items, fresh, printed = run(tmp_path / "first")
    assert len(items) == 7 and {i["status"] for i in items} == {"done"}
    details = [json.loads(i["detail"]) for i in items]
    assert all(d["stored"] > 0 and d["hits"] > 0 and "build_warnings" not in d for d in details)
    assert "build reported warnings" not in printed
    assert fresh["observer"] > 0 and fresh["retrieval"] > 0  # extraction and vectors went through the services
    # Shown with the session's date, not today's.
    assert all(line.startswith("- [2023-") for i in items for line in _memory_lines(i))
    # Every built memory recorded a turn per user message (the per-turn cost table), mem0's extraction charged.
    tables = [json.loads(i["turns"]) for i in items if not i["reused_memory"]]
    assert tables and all(t["prompt"] for t in tables) and any(sum(t["observer_prompt"]) for t in tables)
    _, again, _ = run(tmp_path / "again", cache=tmp_path / "first" / "cache")
    assert sum(again.values()) == 0  # every call of the second run came from the response cache


def _memory_lines(item: dict[str, Any]) -> list[str]:
    import zlib

    messages = json.loads(zlib.decompress(item["actor_prompt"]))
    return [line for m in messages for line in str(m["content"]).splitlines() if line.startswith("- [")]


def test_without_its_responder_an_empty_build_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Mem0System, "offline_responder", lambda self: None)
    items, _, printed = run(tmp_path)
    assert {i["status"] for i in items} == {"done"}
    for item in items:
        (warning,) = json.loads(item["detail"])["build_warnings"]
        assert warning.startswith("0 memories stored") and "memory.extraction_schema=true" in warning, warning
    assert "7 questions answered from a memory whose build reported warnings" in " ".join(printed.split())


def test_one_memory_per_locomo_conversation(tmp_path: Path) -> None:
    path = write_locomo_shaped(tmp_path, conversations=1, sessions=3)
    items, fresh, _ = run(tmp_path, "dataset=locomo", f"dataset.path={path}", "dataset.corrections=null")
    assert items and {i["status"] for i in items} == {"done"}
    assert sum(not i["reused_memory"] for i in items) == 1  # built once, shared by the conversation's questions
    assert fresh["observer"] == 3  # one extraction per session, paid once


def test_mem0s_prompt_reads_the_sessions_date() -> None:
    _mem0()
    from mem0.configs.prompts import generate_additive_extraction_prompt

    token = _SESSION_DATE.set(datetime(2023, 5, 20, 14, 0))
    try:
        prompt = generate_additive_extraction_prompt(new_messages="user: hi\n")
    finally:
        _SESSION_DATE.reset(token)
    assert "## Observation Date\n2023-05-20" in prompt and "## Current Date\n2023-05-20" in prompt
    assert "## Current Date\n2023-05-20" not in generate_additive_extraction_prompt(new_messages="user: hi\n")


def test_the_offline_reply_speaks_mem0s_format_and_nothing_else() -> None:
    prompt = "## Existing Memories\n[]\n## New Messages\nuser: I moved to Lisbon\nassistant: Nice!\n## Current Date\nx"
    reply = mem0_offline_reply([{"role": "user", "content": prompt}], {"response_format": {"type": "json_object"}})
    assert reply is not None and json.loads(reply) == {"memory": [{"id": "0", "text": "User said: I moved to Lisbon"}]}
    assert mem0_offline_reply([{"role": "user", "content": "Answer the question"}],
                              {"response_format": {"type": "json_object"}}) is None
    assert mem0_offline_reply([{"role": "user", "content": prompt}], {"response_format": None}) is None


def test_bad_options_are_named() -> None:
    with pytest.raises(ValueError, match="memory.top_k"):
        Mem0System({"top_k": 0})
    with pytest.raises(ValueError, match="memory.infer"):
        Mem0System({"infer": "yes"})


def test_a_text_past_the_embedding_models_limit_is_cut_to_it() -> None:
    from om_eval.systems.library_turns import fit_to_limit as _fit

    class Words:
        def count_tokens(self, text: str) -> int:
            return len(text.split())

    text = " ".join(f"w{i}" for i in range(100))
    assert _fit(Words(), text, None) == text and _fit(Words(), text, 200) == text
    cut = _fit(Words(), text, 50)  # 90 % of the limit: 45 words, the start kept
    assert cut.split() == text.split()[:45]


#: Set to 1 to give the local model mem0's whole extraction prompt (about 8,000 tokens: 3-6 minutes of prompt
#: processing on 2 cores, too long for CI's half hour; measured figures in docs/performance.md).
SLOW_LOCAL = os.environ.get("OM_EVAL_SLOW_LOCAL") == "1"


@pytest.mark.skipif(not SLOW_LOCAL, reason="mem0's 8,000-token prompt on the local 1.5B model takes minutes: set "
                                           "OM_EVAL_SLOW_LOCAL=1 to run it")
def test_the_local_model_as_mem0s_extractor_stores_memories_from_schema_valid_json(tmp_path: Path) -> None:
    from tests.llm.test_local import _real_model_or_skip

    _real_model_or_skip()
    items, fresh, printed = run(tmp_path, "memory.extraction_schema=true", "model@models.observer=local",
                                "model@models.embedding=local-embedding", "dataset.subset.first=1")
    (item,) = items
    detail = json.loads(item["detail"])
    assert item["status"] == "done" and detail["stored"] > 0 and "build_warnings" not in detail, detail
    assert fresh["observer"] > 0 and "build reported warnings" not in printed
    assert all(line.startswith("- [2023-") for line in _memory_lines(item))
