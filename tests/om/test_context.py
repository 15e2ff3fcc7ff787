"""What the actor sees: optimisation rules, both layouts, other conversations, the reminder."""

from __future__ import annotations

from datetime import datetime

import pytest

from om_eval.om.context import (
    ContextInputs,
    build_actor_context,
    format_other_conversations,
    optimize_for_context,
    split_observation_chunks,
)
from om_eval.om.dates import format_boundary
from om_eval.om.records import Message
from tests.golden import assert_golden

NOW = datetime(2025, 12, 9, 10, 0)
OBSERVATIONS = (
    "Date: Dec 4, 2025\n"
    "* 🔴 (14:30) User stated they have a beagle named Toby.\n"
    "* 🟡 (14:31) Assistant suggested [see vet list] three vets -> picked Dr. Lima\n"
    "  * -> booked for Friday\n"
    "* 🟢 (14:35) User might adopt a second dog."
    + format_boundary(datetime(2025, 12, 4, 14, 36))
    + "Date: Dec 8, 2025\n"
    "* 🔴 (09:00) User will tour the tile museum with Ana. (meaning Dec 6-7, 2025)\n"
    "* ✅ (09:10) Vet visit done [3 items collapsed]"
)


def test_optimize_rules_in_order() -> None:
    text = "[O1] * 🟡 (10:00) Called   tool [Tool Call: x] -> result\n\n\n\n* 🔴 keep [link](http://a) [5 items collapsed]"
    assert optimize_for_context(text) == "* (10:00) Called tool result\n\n* 🔴 keep [link](http://a) [5 items collapsed]"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("* 🟢 maybe", "* maybe"),
        ("* ✅ done", "* ✅ done"),
        ("a  ->  b", "a b"),
        ("[Image #1: cat.png] cat photo", "cat photo"),
        ("  padded  ", "padded"),
    ],
)
def test_optimize_single_rules(raw: str, expected: str) -> None:
    assert optimize_for_context(raw) == expected


def test_chunks_split_on_boundaries() -> None:
    chunks = split_observation_chunks(OBSERVATIONS)
    assert len(chunks) == 2 and chunks[1].startswith("Date: Dec 8, 2025")


def test_chunked_layout_golden() -> None:
    messages = build_actor_context(ContextInputs(OBSERVATIONS, NOW, current_task="Plan the weekend"), "chunked")
    roles = [m["role"] for m in messages]
    assert roles == ["system", "system", "system", "system", "system", "user"]
    assert messages[1]["content"] == "<observations>"
    assert "Date: Dec 4, 2025 (5 days ago)" in messages[2]["content"]
    assert "(meaning Dec 6-7, 2025 - 3 days ago, likely already happened)" in messages[3]["content"]
    assert "🟡" not in messages[2]["content"] and "Dr. Lima" in messages[2]["content"]
    assert messages[4]["content"] == "<current-task>\nPlan the weekend\n</current-task>"
    assert_golden("context_chunked.txt", "\n\n=====\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages))


def test_single_layout_golden() -> None:
    other = {"a1b2c3d4": [Message("m1", "x", "user", "Still deciding on the vet." + " z" * 400, NOW)]}
    messages = build_actor_context(ContextInputs(OBSERVATIONS, NOW, other_conversations=other), "single")
    assert [m["role"] for m in messages] == ["system", "user"]
    system = messages[0]["content"]
    assert system.startswith("\n") and "</observations>" in system
    assert system.index("</observations>") < system.index("START_OTHER_CONVERSATIONS_BLOCK")
    assert '<other-conversation id="a1b2c3d4">' in system and "... [truncated" in system  # 500-char part cap
    assert "MOST RECENT USER INPUT" not in system  # the benchmark era had three instruction paragraphs
    assert_golden("context_single.txt", "\n\n=====\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages))


def test_no_observations_means_no_marker_and_no_reminder() -> None:
    messages = build_actor_context(ContextInputs("", NOW), "chunked")
    assert len(messages) == 1 and "<observations>" not in messages[0]["content"]


def test_other_conversations_skip_empty_threads() -> None:
    empty = Message("m1", "x", "user", "   ", NOW)
    assert format_other_conversations({"x": [empty]}) == ""


def test_unknown_layout_is_rejected() -> None:
    with pytest.raises(ValueError, match="context_layout='wide' is invalid"):
        build_actor_context(ContextInputs(OBSERVATIONS, NOW), "wide")
