"""Token counting: offline o200k_base, reference overheads, pluggable estimators."""

from __future__ import annotations

import math
from datetime import datetime

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from om_eval.om.records import Message
from om_eval.om.tokens import (
    CharRatioCounter,
    TiktokenCounter,
    count_message,
    count_messages,
    count_text,
    make_counter,
    over_limit,
)


def test_o200k_base_counts_offline() -> None:
    counter = TiktokenCounter()
    assert counter.name == "tiktoken/o200k_base"
    assert count_text("hello world") == 2
    assert count_text("") == 0
    assert count_text("<|endoftext|>") >= 1  # special tokens are allowed, not rejected


def test_message_overhead_is_role_plus_payload_plus_3_8_rounded() -> None:
    counter = TiktokenCounter()
    message = {"role": "user", "content": "hello world"}
    expected = round(counter.count_text("user") + counter.count_text("hello world") + 3.8)
    assert count_message(message) == expected == 7


def test_conversation_overhead_once_and_empty_list_is_zero() -> None:
    messages = [{"role": "user", "content": "hello world"}, {"role": "assistant", "content": "hi"}]
    assert count_messages([]) == 0
    assert count_messages(messages) == 24 + count_message(messages[0]) + count_message(messages[1])


def test_message_objects_and_parts() -> None:
    when = datetime(2025, 1, 1)
    text = Message("m1", "t", "user", "hello world", when)
    parts = Message("m2", "t", "user", ({"type": "text", "text": "hello world"},), when)
    assert count_message(text) == count_message(parts)
    counter = TiktokenCounter()
    call = {"role": "assistant", "content": [{"type": "tool-call", "tool_name": "search", "args": {"q": "cats"}}]}
    expected = (
        counter.count_text("assistant") + counter.count_text("search") + counter.count_text('{"q": "cats"}') - 12 + 3.8
    )
    assert count_message(call) == round(expected)
    result = {"role": "tool", "content": [{"type": "tool-result", "tool_name": "search", "result": "ok"}]}
    assert count_message(result) == round(counter.count_text("tool") + counter.count_text("ok") + 3.8 + 3.8)
    marker = {"role": "assistant", "content": [{"type": "data-om-status", "data": {"x": 1}}]}
    assert count_message(marker) == round(counter.count_text("assistant") + 3.8)


def test_pluggable_estimators_record_their_name() -> None:
    chars = make_counter("chars")
    assert isinstance(chars, CharRatioCounter) and chars.name == "chars/4"
    assert chars.count_text("abcdefgh") == 2 and chars.count_text("abcdefghi") == 3
    assert make_counter("chars/3").count_text("abcdef") == 2
    assert make_counter("tiktoken/cl100k_base").name == "tiktoken/cl100k_base"
    with pytest.raises(ValueError, match="token estimator 'bpe' is unknown"):
        make_counter("bpe")


# Characters chosen to stress the piece boundaries at line breaks: every kind of whitespace and line break,
# slashes after punctuation, digits, contractions, mixed case, emoji, CJK, combining marks, and a special token.
_TRICKY = st.sampled_from([
    "\n", "\n", "\n", "\r", "\r\n", " ", "  ", "\t", "\u2028", "\xa0", "\x85", "\u3000", "/", "//", ".", ".)", "*",
    "-", "- ", "* ", "🔴", "✅", "(14:30)", "2023", "12345", "'s", "'LL", "Dr.", "URL", "hello", "World", "naïve",
    "e\u0301", "日本語", "<|endoftext|>", "http://x.io/a", ":", "...", "#", "\\",
])
_TRICKY_TEXT = st.lists(_TRICKY, min_size=1, max_size=120).map("".join)


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
@settings(max_examples=400, deadline=None)
@given(text=_TRICKY_TEXT)
@example(text="x)\n//y")  # o200k merges ")\n//" into one piece: no cut before a slash
@example(text="...\n/usr/bin")
@example(text="a.\n\n/b")
def test_a_long_text_counted_by_line_pieces_counts_as_a_whole(encoding: str, text: str) -> None:
    counter = TiktokenCounter(encoding)
    counter.REMEMBERED_CHARS = 8  # so that short texts take the piecewise path too
    whole = len(counter._encoding.encode(text, allowed_special="all"))
    assert counter.count_text(text) == whole
    assert counter.count_text(text) == whole  # and again from the remembered pieces


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
@settings(max_examples=300, deadline=None)
@given(text=_TRICKY_TEXT, limit=st.integers(min_value=0, max_value=80))
@example(text="a\nb\n" * 40, limit=3)
def test_whether_a_text_exceeds_a_limit_read_from_its_end_agrees_with_its_whole_count(
    encoding: str, text: str, limit: int
) -> None:
    counter = TiktokenCounter(encoding)
    counter.REMEMBERED_CHARS = 8  # suffixes counted piecewise too
    whole = len(counter._encoding.encode(text, allowed_special="all"))
    assert counter.exceeds(text, limit) == (whole > limit)
    assert over_limit(CharRatioCounter())(text, limit) == (math.ceil(len(text) / 4) > limit)


def test_observations_grown_by_a_line_count_as_a_whole() -> None:
    counter = TiktokenCounter()
    lines = [f"* 🔴 (09:{i % 60:02d}) User mentioned item {i}/{i + 1}: " + "detail " * (i % 9) for i in range(300)]
    for size in (50, 51, 200, 300):
        text = "\n".join(lines[:size])
        assert counter.count_text(text) == len(counter._encoding.encode(text, allowed_special="all"))
