"""Templates cut from a builder's output give the builder's text back for any input (toy builders, own words)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.om.exact.errors import RenderError
from om_eval.om.exact.template import (
    Item,
    ListSlot,
    Sentinels,
    Slot,
    Template,
    derive_list,
    fill,
    from_json,
    text_of,
    to_json,
)

TEXT = st.text(st.characters(blacklist_categories=("Cs", "Co")), max_size=30)


def toy(note: str | None, name: str, fields: Mapping[str, str]) -> str:
    """A builder in the manner of Mastra's: literals, an optional section, a list whose items indent line feeds."""
    out = f"# Notes for {name}\n\n"
    if note:
        out += f"## Note\n\n{note}\n\n---\n\n"
    lines = [f"  - {kind}: {value.replace(chr(10), chr(10) + '    ')}" for kind, value in fields.items() if value]
    if lines:
        out += "## Fields\n\n" + "\n".join(lines) + "\n\n"
    return out + "## End"


def _cut_toy(with_note: bool) -> tuple[Template, Template]:
    """The toy's template without fields and with the field list, derived as the renderer derives them."""
    s = Sentinels()
    name = s.value("name")
    note = s.value("note") if with_note else None
    plain = s.cut(toy(note, name, {}))
    values = {kind: s.value("value") for kind in ("colour", "size")}
    singles = {kind: toy(note, name, {kind: value}) for kind, value in values.items()}
    spans = {kind: (out.index(values[kind][0]), out.index(values[kind][-1]) + 1) for kind, out in singles.items()}
    found = derive_list(singles, ("colour", "size", toy(note, name, values)), spans)
    slot = ListSlot("fields", found.join, {k: s.cut(found.items[k]) for k in values}, ("colour", "size"))
    return plain, s.cut(found.before) + (slot,) + s.cut(found.after)


@settings(max_examples=300, deadline=None)
@given(note=TEXT, name=TEXT, colour=TEXT, size=TEXT)
def test_a_derived_template_gives_the_builder_text_for_any_input(note: str, name: str, colour: str, size: str) -> None:
    plain, listed = _cut_toy(bool(note))
    fields = {"colour": colour, "size": size}
    items: list[Item] = [(kind, {"value": value}) for kind, value in fields.items() if value]
    values: dict[str, str | list[Item]] = {"name": name, "fields": items}
    if note:
        values["note"] = note
    assert fill(listed if items else plain, values) == toy(note or None, name, fields)


def test_a_line_feed_image_is_read_from_the_two_halves() -> None:
    s = Sentinels()
    value = s.value("v")
    template = s.cut("a " + value.replace("\n", "\n    ") + " b")
    assert template == ("a ", Slot("v", "\n    "), " b")
    assert fill(template, {"v": "x\ny"}) == "a x\n    y b"


def test_a_literal_is_cut_whole_and_an_unknown_sentinel_is_an_error() -> None:
    s = Sentinels()
    mark = s.line("text")
    shown = f"**User:**\n{mark}"
    assert s.cut(f"<{shown}>", {shown: "history"}) == ("<", Slot("history"), ">")
    with pytest.raises(RenderError, match="no sentinel"):
        s.cut("abc", {"abc": "history"})
    with pytest.raises(RenderError, match="where no input went"):
        Sentinels().cut("x" + chr(0xF0000 + 500))


def test_an_input_the_builder_split_is_refused() -> None:
    s = Sentinels()
    first = s.value("v").split("\n")[0]
    with pytest.raises(RenderError, match="split or dropped"):
        s.cut(first + "only the first half")


def test_missing_values_and_wrong_kinds_are_errors_not_empty_text() -> None:
    template: Template = ("a", Slot("x"), ListSlot("l", ",", {"k": (Slot("v"),)}, ("k",)))
    with pytest.raises(KeyError):
        fill(template, {"l": []})
    with pytest.raises(TypeError):
        fill(template, {"x": ["no"], "l": []})  # type: ignore[list-item]
    assert fill(template, {"x": "1", "l": [("k", {"v": "p"}), ("k", {"v": "q"})]}) == "a1p,q"


def test_templates_survive_json_and_list_their_wording() -> None:
    inner: Template = ("<", Slot("v", "\n  "), ">")
    listed = ListSlot("l", "; ", {"k": inner}, ("k",))
    template: Template = ("head ", Slot("obs", transform="anchored"), listed, " tail")
    assert from_json(to_json(template)) == template
    assert list(text_of(template)) == ["head ", "<", ">", " tail"]


def test_a_two_item_rendering_that_does_not_extend_the_single_ones_is_refused() -> None:
    with pytest.raises(RenderError, match="does not extend"):
        derive_list({"a": "[A]", "b": "[B]"}, ("a", "b", "something else"))


@pytest.mark.parametrize("join", [", ", "\n", ""])
def test_items_that_start_alike_keep_their_common_start_when_spans_say_so(join: str) -> None:
    def render(items: Sequence[str]) -> str:
        return "<" + join.join(f"**User:** {item}" for item in items) + ">"

    singles = {"a": render(["\U000f0001"]), "b": render(["\U000f0002"])}
    spans = {"a": (1, len(singles["a"]) - 1), "b": (1, len(singles["b"]) - 1)}
    found = derive_list(singles, ("a", "b", render(["\U000f0001", "\U000f0002"])), spans)
    assert (found.before, found.after, found.join) == ("<", ">", join)
    assert found.items["a"] == "**User:** \U000f0001"
