"""Observation groups: wrapping, reading back, stripping for the Reflector, rendering for the actor, and the
mapping of a reflection back to its source ranges (the differential suite checks the same against 1.31)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from om_eval.om.groups import (
    ObservationGroup,
    combine_ranges,
    group_id_for,
    message_range,
    parse_groups,
    reconcile_after_reflection,
    render_groups,
    strip_groups,
    wrap_in_group,
)
from om_eval.om.records import Message

ids = st.text("abcdef0123456789-", min_size=1, max_size=12)
lines = st.lists(st.text(st.characters(blacklist_characters="<>\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
                         min_size=1, max_size=30).filter(lambda s: s.strip()), min_size=1, max_size=5)


@given(ids, ids, ids, lines)
def test_a_wrapped_group_reads_back_as_written(group_id: str, first: str, last: str, body: list[str]) -> None:
    text = "\n".join(f"* {line.strip()}" for line in body)
    wrapped = wrap_in_group(text, f"{first}:{last}", group_id)
    assert parse_groups(wrapped) == [ObservationGroup(group_id, f"{first}:{last}", text)]
    assert strip_groups(wrapped) == text


def test_the_actor_reads_groups_as_headed_sections() -> None:
    text = wrap_in_group("* a", "m1:m2", "g1") + "\n\n--- message boundary (2026-01-01T00:00:00.000Z) ---\n\n" + \
        wrap_in_group("* b", "m3:m3", "g2")
    rendered = render_groups(text)
    assert rendered is not None
    assert rendered.startswith("## Group `g1`\n_range: `m1:m2`_\n\n* a")
    assert "--- message boundary" in rendered and "## Group `g2`" in rendered
    assert render_groups("* no groups") is None


def test_an_inline_mention_is_text_and_an_unclosed_line_opening_is_dropped() -> None:
    inline = "* the user typed <observation-group id=\"x\" range=\"a:b\"> once"
    assert parse_groups(inline) == [] and strip_groups(inline) == inline
    assert strip_groups('<observation-group id="x" range="a:b">\n* kept') == "* kept"


def test_ranges_combine_by_value_when_numeric_else_first_start_to_last_end() -> None:
    assert combine_ranges([ObservationGroup("a", "7:9", ""), ObservationGroup("b", "2:3", "")]) == "2:9"
    assert combine_ranges([ObservationGroup("a", "m7:m9", ""), ObservationGroup("b", "m2:m3", "")]) == "m7:m3"
    assert combine_ranges([ObservationGroup("a", "odd", ""), ObservationGroup("b", "m2:m3", "")]) == "odd,m2:m3"


def test_a_reflection_without_headings_becomes_one_group_over_every_source_range() -> None:
    source = wrap_in_group("* a", "m1:m2", "g1") + "\n\n" + wrap_in_group("* b", "m3:m4", "g2")
    result = reconcile_after_reflection("* a and b", source, lambda: "new")
    assert result == wrap_in_group("* a and b", "m1:m4", "new", "reflection")
    assert reconcile_after_reflection("* a", "* ungrouped", lambda: "new") is None


def test_a_reflection_that_keeps_headings_keeps_each_groups_range() -> None:
    source = wrap_in_group("* a", "m1:m2", "g1") + "\n\n" + wrap_in_group("* b", "m3:m4", "g2")
    reflection = "## Group `g2`\n_range: `m3:m4`_\n\n* b\n\n## Group `g1`\n\n* a"
    groups = parse_groups(reconcile_after_reflection(reflection, source, lambda: "unused") or "")
    assert [(g.id, g.range, g.kind) for g in groups] == [("g2", "m3:m4", "reflection"), ("g1", "m1:m2", "reflection")]


def test_a_cycles_range_skips_messages_with_nothing_visible_and_ids_are_stable() -> None:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    messages = [Message("m0", "t", "assistant", ({"type": "step-start"},), when),
                Message("m1", "t", "user", "hi", when), Message("m2", "t", "assistant", ({"type": "data-x"},), when)]
    assert message_range(messages) == "m1:m1"
    assert message_range(messages[:1]) == "m0:m0"
    assert group_id_for("m1:m1", "* a") == group_id_for("m1:m1", "* a") != group_id_for("m1:m2", "* a")
    assert len(group_id_for("m1:m1", "* a")) == 16
