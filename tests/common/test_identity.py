"""The identity rule's mechanics: how each class of setting enters a view."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from om_eval.common.identity import IdentityRule, leaf_paths, lookup

RULE = IdentityRule(
    name="test id",
    hashed=frozenset({"a", "models.", "group.kept"}),
    omitted_at={"later": "off", "group.flag": False},
    only_with={"hash_fn": "obscure"},
    left_out=frozenset({"run.", "group.view"}),
)


def test_each_class_enters_as_described() -> None:
    data = {"a": 1, "later": "off", "hash_fn": "xxh32", "obscure": False, "run": {"folder": "x"},
            "models": {"actor": {"model": "m", "provider_options": {}}},
            "group": {"kept": 2, "flag": False, "view": "single"}}
    assert RULE.view(data) == {"a": 1, "obscure": False, "models": {"actor": {"model": "m", "provider_options": {}}},
                               "group": {"kept": 2}}
    moved = {**data, "later": "on", "obscure": True, "group": {"kept": 2, "flag": True, "view": "single"}}
    assert RULE.view(moved) == {"a": 1, "later": "on", "hash_fn": "xxh32", "obscure": True,
                                "models": data["models"], "group": {"kept": 2, "flag": True}}


def test_a_pinned_value_is_matched_by_kind_as_well_as_value() -> None:
    # 0 == False in Python, but they are different settings and serialise differently.
    assert RULE.view({"group": {"flag": 0}}) == {"group": {"flag": 0}}
    assert RULE.view({"group": {"flag": False}}) == {"group": {}}


def test_an_unclassed_setting_is_hashed_and_listed() -> None:
    assert RULE.view({"new": 3, "group": {"other": None}}) == {"new": 3, "group": {"other": None}}
    assert RULE.unclassed(["a", "new", "models.actor.model", "group.other", "run.label"]) == ["group.other", "new"]


def test_a_setting_classed_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="'a' is classed twice"):
        IdentityRule(name="bad", hashed=frozenset({"a"}), omitted_at={"a": 1})


def test_lookup_and_leaf_paths() -> None:
    data = {"a": {"b": {"c": 1}, "d": {}}, "e": None}
    assert lookup(data, "a.b.c") == 1 and lookup(data, "a.x") is None and lookup(data, "e.f") is None
    assert leaf_paths(data) == {"a.b.c": 1, "a.d": {}, "e": None}


settings = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=3),
                        lambda inner: st.dictionaries(st.sampled_from(["a", "later", "group", "flag", "x"]), inner,
                                                      max_size=4), max_leaves=12)


@given(st.dictionaries(st.sampled_from(["a", "later", "group", "run", "x"]), settings, max_size=5))
def test_a_view_never_adds_and_keeps_every_hashed_value(data: dict) -> None:
    view = RULE.view(data)
    kept = leaf_paths(view)
    for path, value in kept.items():
        assert lookup(data, path) == value or isinstance(value, dict)
    for path in leaf_paths(data):
        if RULE.kind_of(path) in (None, "hashed"):
            assert path in kept or any(path.startswith(k + ".") for k in kept)


def test_a_setting_left_out_below_a_hashed_subtree_stays_out() -> None:
    rule = IdentityRule(name="test id", hashed=frozenset({"models."}),
                        left_out=frozenset({"models.actor.options.price"}))
    data = {"models": {"actor": {"model": "m", "options": {"price": 1, "base": "b"}}, "judge": {"model": "j"}}}
    assert rule.view(data) == {"models": {"actor": {"model": "m", "options": {"base": "b"}}, "judge": {"model": "j"}}}
    assert rule.view({"models": {"actor": {"model": "m", "options": {"base": "b"}}}}) == rule.view(
        {"models": {"actor": {"model": "m", "options": {"base": "b", "price": 9}}}})
