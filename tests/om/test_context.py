"""What the actor sees: optimisation rules, both layouts, other conversations, the reminder."""

from __future__ import annotations

import dataclasses
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.om.context import (
    ContextInputs,
    actor_memory_messages,
    build_actor_context,
    format_other_conversations,
    optimize_for_context,
    split_observation_chunks,
)
from om_eval.om.dates import format_boundary
from om_eval.om.records import Message
from om_eval.om.rules import release_rules
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
    text = ("[O1] * 🟡 (10:00) Called   tool [Tool Call: x] -> result\n\n\n\n"
            "* 🔴 keep [link](http://a) [5 items collapsed]")
    assert optimize_for_context(text) == "* (10:00) Called tool result\n\n* 🔴 keep (http://a) [5 items collapsed]"


def _optimized_by_every_pattern(text: str, keep_link_labels: bool) -> str:
    """The rules as plain regex passes over the whole text, each run whether or not it can match: what the shortcuts
    of :func:`optimize_for_context` (each pass only when its literal occurs, arrows by splitting) must equal."""
    import re

    from om_eval.om import context
    from om_eval.om.anchors import _STRIP_PATTERN
    from om_eval.om.js.text import WS, js_trim

    text = _STRIP_PATTERN.sub(r"\1\2", text)
    text = context._LOW_PRIORITY.sub("", text)
    text = (context._BRACKETED_NOT_LINK if keep_link_labels else context._BRACKETED).sub("", text)
    text = re.sub(rf"[{WS}]*->[{WS}]*", " ", text)
    text = context._SPACES.sub(" ", text)
    text = context._BLANK_RUNS.sub("\n\n", text)
    return js_trim(text)


_PIECES = st.sampled_from([
    "->", "-", ">", " ", "  ", "\t", "\n", "\r", "\x0b", "\x0c", "\u2028", "\u3000", "\u2005", "\ufeff", "\u200b",
    "a", "b c", "🟡", "🟢", "🔴", "[", "]", "(", "[O1]", "[O2-N3] ", "[O", "5 items collapsed", "\n\n\n",
])


@settings(max_examples=600, deadline=None)
@given(pieces=st.lists(_PIECES, max_size=25), keep_link_labels=st.booleans())
def test_the_shortcuts_optimize_as_every_pattern_would(pieces: list[str], keep_link_labels: bool) -> None:
    text = "".join(pieces)
    assert optimize_for_context(text, keep_link_labels=keep_link_labels) == _optimized_by_every_pattern(
        text, keep_link_labels)


@pytest.mark.parametrize(
    "marker",
    [
        "[5 items collapsed - ID: a1b2c3]",  # 1.10 keeps the marker whatever follows "items collapsed"
        "[ 12 items collapsed]",
        "[items collapsed]",
        "[3\nitems collapsed - ID: x]",
    ],
)
def test_optimize_keeps_collapsed_markers(marker: str) -> None:
    assert optimize_for_context(f"* 🔴 Tool runs {marker} done") == f"* 🔴 Tool runs {marker} done"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a [12 Items Collapsed] b", "a b"),  # the exception is case-sensitive
        ("a [see\nnext line] b", "a b"),  # a bracketed aside may span lines
        ("a [x [y] z] b", "a z] b"),  # it ends at the first "]"
        ("a [] b", "a [] b"),  # and holds at least one character
        ("a [link](http://x) b", "a (http://x) b"),  # 1.10 drops link labels too
    ],
)
def test_optimize_bracket_rules(raw: str, expected: str) -> None:
    assert optimize_for_context(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a [link](http://x) b", "a [link](http://x) b"),  # 1.27+ keeps a markdown link's label
        ("a [Image #1: cat](x b", "a [Image #1: cat](x b"),  # whatever "(" follows, not only a link
        ("a [aside] (x) b", "a (x) b"),  # a space in between: still an aside
        ("a [x [y](z) b", "a [x [y](z) b"),
    ],
)
def test_optimize_keeps_link_labels_as_1_27_does(raw: str, expected: str) -> None:
    assert optimize_for_context(raw, keep_link_labels=True) == expected


def test_optimize_uses_js_whitespace() -> None:
    # JS \s and trim() know U+FEFF but not U+001C or U+0085; "🟡" eats line breaks after it too.
    assert optimize_for_context("\ufeff* 🟡\n\ufeffx\x1c") == "* x\x1c"
    assert optimize_for_context("\x85a ->\x85b") == "\x85a \x85b"
    assert optimize_for_context("a\r\n\r\n\r\nb") == "a\r\n\r\n\r\nb"  # only runs of LF collapse


def test_chunks_are_trimmed_and_need_utc_boundaries() -> None:
    text = (
        "  A \n\n\n--- message boundary (2025-01-02T03:04:05.000Z) ---\n\n\n B"
        "\n\n--- message boundary (2025-01-02) ---\n\nC"
    )
    assert split_observation_chunks(text) == ["A", "B\n\n--- message boundary (2025-01-02) ---\n\nC"]
    assert split_observation_chunks(" \n ") == []


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


def test_v1_31_context_golden() -> None:
    """1.11+: a fifth instruction paragraph on system reminders and the shorter reminder; 1.27+ link labels."""
    inputs = ContextInputs(OBSERVATIONS + "\n* 🔴 (11:00) Read [the guide](https://example.com)", NOW,
                           current_task="Plan the weekend", rules=release_rules("v1_31"))
    messages = build_actor_context(inputs, "chunked")
    older = build_actor_context(dataclasses.replace(inputs, rules=release_rules("v1_10")), "chunked")
    assert [m["role"] for m in messages] == [m["role"] for m in older]
    assert messages[0]["content"].startswith(older[0]["content"] + "\n\nSYSTEM REMINDERS:")
    assert len(messages[-1]["content"]) < len(older[-1]["content"]) and "<system-reminder>" in messages[-1]["content"]
    assert "[the guide](https://example.com)" in messages[-3]["content"]
    assert messages[1:-1] != older[1:-1]  # only the link label differs in between
    assert_golden("context_v1_31.txt", "\n\n=====\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages))


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


@pytest.mark.parametrize("layout", ["chunked", "single"])
def test_no_observations_means_no_memory_messages_at_all(layout: str) -> None:
    # 1.1 and 1.10 inject nothing (no preamble, no other conversations, no reminder) before the first observation.
    other = {"a1b2c3d4": [Message("m1", "x", "user", "Still deciding on the vet.", NOW)]}
    assert actor_memory_messages(ContextInputs("", NOW, other_conversations=other), layout) == []
    kept = actor_memory_messages(ContextInputs(" ", NOW, other_conversations=other), layout)  # as 1.x tests it
    assert kept == build_actor_context(ContextInputs(" ", NOW, other_conversations=other), layout)


def test_other_conversations_skip_empty_threads_but_keep_blank_messages() -> None:
    empty = Message("m1", "x", "user", "", NOW)
    assert format_other_conversations({"x": [empty]}) == ""
    blank = Message("m2", "x", "user", "   ", NOW)  # 1.10 checks for an empty string, not a trimmed one
    assert "**User (" in format_other_conversations({"x": [blank]})


def test_unknown_layout_is_rejected() -> None:
    with pytest.raises(ValueError, match="context_layout='wide' is invalid"):
        build_actor_context(ContextInputs(OBSERVATIONS, NOW), "wide")
