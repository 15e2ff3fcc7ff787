"""The guard on what one recall call sends and gets back (``om_eval.om.recall.limits``), and the tool's own bounds on
what it echoes: hostile arguments are refused with a reason, never an exception of another kind, and nothing echoed
or returned grows without limit."""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.om.js.tokenx import estimate_tokens
from om_eval.om.recall.limits import (
    MAX_ARGUMENTS_CHARS,
    MAX_ARGUMENTS_DEPTH,
    MAX_ECHO_CHARS,
    MAX_SAFE_INTEGER,
    ArgumentsRefused,
    bound_result,
    nesting_depth,
    parse_arguments,
    shown,
)
from om_eval.om.recall.schema import validation_error
from om_eval.om.recall.tool import RecallError, result_json
from tests.om.recall.test_tool import ask


def nested(levels: int, inner: str = '"threads"') -> str:
    return '{"mode":' + "[" * levels + inner + "]" * levels + "}"


def test_normal_arguments_parse_as_they_are() -> None:
    assert parse_arguments("") == {}
    assert parse_arguments('{"cursor":"m3","page":-1,"limit":20}') == {"cursor": "m3", "page": -1, "limit": 20}


@pytest.mark.parametrize(("text", "reason"), [
    ("{mode: threads", "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('"threads"', "must be a JSON object"),
    ('{"cursor":"' + "a" * MAX_ARGUMENTS_CHARS + '"}', f"are {MAX_ARGUMENTS_CHARS + 13:,} characters long"),
    (nested(MAX_ARGUMENTS_DEPTH), "nest more than 32 levels deep"),
    ("[" * 100_000 + "]" * 100_000, "at most 4,000 are read"),
    ('{"page":1' + "0" * 400 + "}", "page must be a whole number between -50 and 50"),
    ('{"limit":-1' + "0" * 30 + "}", "limit must be a whole number between 1 and 20"),
    (f'{{"charOffset":{MAX_SAFE_INTEGER + 1}}}',
     f"charOffset must be a whole number between 0 and {MAX_SAFE_INTEGER:,}"),
    ('{"partIndex":Infinity}', "partIndex must be a whole number between 0 and"),
    ('{"page":NaN}', "page must be a whole number"),
    ('{"page":1e400}', "page must be a whole number"),
    ('{"mode":[1' + "0" * 30 + "]}", "mode holds a number beyond what JSON carries exactly"),
])
def test_hostile_arguments_are_refused_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(ArgumentsRefused, match=re.escape(reason)):
        parse_arguments(text)


def test_the_limits_leave_room_for_anything_a_model_means() -> None:
    deep_enough = nested(MAX_ARGUMENTS_DEPTH - 1)  # the object is one level, the lists the rest
    assert nesting_depth(deep_enough, MAX_ARGUMENTS_DEPTH) == MAX_ARGUMENTS_DEPTH
    assert parse_arguments(deep_enough)["mode"]
    brackets_in_text = json.dumps({"query": "[" * 1000 + '{"\\' + "}" * 10, "page": MAX_SAFE_INTEGER})
    assert nesting_depth(brackets_in_text, MAX_ARGUMENTS_DEPTH) == 1
    assert parse_arguments(brackets_in_text)["page"] == MAX_SAFE_INTEGER  # out of the schema: its error, 1.31's


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                        max_size=4), max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), json_values.map(json.dumps),
                 st.integers(1, 50_000).map(lambda n: "[" * n + "]" * n),
                 st.integers(1, 2_000).map(lambda n: '{"a":' * n + "1" + "}" * n)))
def test_any_text_is_an_object_or_a_refusal(text: str) -> None:
    try:
        arguments = parse_arguments(text)
    except ArgumentsRefused as refused:
        assert 0 < len(str(refused)) < 400
        return
    assert isinstance(arguments, dict)
    assert nesting_depth(text, MAX_ARGUMENTS_DEPTH) <= MAX_ARGUMENTS_DEPTH
    json.dumps(arguments)  # nothing in it breaks a recursive writer


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=5000), st.integers(0, 400))
def test_shown_keeps_short_text_and_cuts_long_text_with_a_note(text: str, max_chars: int) -> None:
    echoed = shown(text, max_chars)
    if len(text) <= max_chars:
        assert echoed == text
    else:
        assert echoed.startswith(text[:max_chars]) and f"(cut: {len(text):,} characters in all)" in echoed
        assert len(echoed) <= max_chars + 40


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=3000), st.integers(40, 800))
def test_a_bounded_result_fits_its_cap_and_keeps_its_start(text: str, cap: int) -> None:
    bounded = bound_result(text, estimate_tokens, cap)
    if estimate_tokens(text) <= cap:
        assert bounded == text
    else:
        assert estimate_tokens(bounded) <= cap and "over the" in bounded
        kept = bounded.rsplit("\n... [cut:", 1)[0]
        assert text.startswith(kept)


def test_a_huge_number_is_a_schema_error_not_an_overflow() -> None:
    found = validation_error({"page": 10**400, "limit": 10**400}, "resource")
    assert found is not None
    assert "page: must be <= 50" in found["message"] and "limit: must be <= 20" in found["message"]
    assert validation_error({"charOffset": 10**400}, "resource") is None  # no upper bound in 1.31's schema
    assert validation_error({"page": math.inf}, "resource") is not None


def test_the_tool_echoes_a_long_cursor_cut_in_its_range_hint_and_errors() -> None:
    cursor = "m1" + "x" * 3_000 + ":" + "m2" + "y" * 3_000
    text = result_json(ask({"cursor": cursor}))
    assert len(text) < 4 * MAX_ECHO_CHARS + 600, len(text)
    assert "looks like a range" in text and "characters in all)" in text
    with pytest.raises(RecallError) as refused:
        ask({"cursor": "nope" * 2_000})
    assert len(str(refused.value)) < MAX_ECHO_CHARS + 100
    short = result_json(ask({"cursor": "m1:m2"}))  # as 1.31 words it
    assert 'The cursor \\"m1:m2\\" looks like a range' in short and 'start=\\"m1\\" or end=\\"m2\\"' in short
