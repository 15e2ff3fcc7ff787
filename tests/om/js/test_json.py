"""JSON.stringify as a model reads it from the recall tool."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from om_eval.om.js.json import js_number, js_stringify

plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(st.characters(exclude_categories=("Cs",))),
    # Keys that are not array indices keep their insertion order in JS too (those are tested apart below).
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text("abc_-. é", max_size=5), children,
                                                                      max_size=4),
    max_leaves=12,
)


@given(plain)
def test_without_floats_it_is_json_dumps_compact_and_indented(value: object) -> None:
    assert js_stringify(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert js_stringify(value, 2) == json.dumps(value, ensure_ascii=False, indent=2)


def test_numbers_are_written_as_javascript_writes_them() -> None:
    assert [js_number(v) for v in (1.0, 150.0, 0.5, -0.0, 1e21, 1.5e-7, 2**53)] == \
        ["1", "150", "0.5", "0", "1e+21", "1.5e-7", "9007199254740992"]
    assert js_stringify("\ud800x") == '"\\ud800x"'


def test_array_index_keys_come_first_in_ascending_order_as_in_js() -> None:
    assert js_stringify({"b": 1, "10": 2, "a": 3, "2": 4, "01": 5, "4294967295": 6}) == \
        '{"2":4,"10":2,"b":1,"a":3,"01":5,"4294967295":6}'
