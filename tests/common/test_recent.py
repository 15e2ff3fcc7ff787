"""The identity-keyed cache: a hit only for the very same objects, the most recent ones kept."""

from __future__ import annotations

from om_eval.common.recent import by_identity


def test_a_hit_needs_the_same_objects_not_equal_ones() -> None:
    calls: list[tuple[int, ...]] = []

    @by_identity(maxsize=4)
    def total(values: tuple[int, ...]) -> int:
        calls.append(values)
        return sum(values)

    first, equal = (1, 2, 3), tuple([1, 2, 3])
    assert first is not equal
    assert [total(first), total(first), total(equal)] == [6, 6, 6]
    assert len(calls) == 2


def test_the_least_recently_used_is_dropped_past_maxsize() -> None:
    calls: list[object] = []

    @by_identity(maxsize=2)
    def seen(value: object, other: object) -> int:
        calls.append(value)
        return len(calls)

    a, b, c, key = object(), object(), object(), object()
    seen(a, key), seen(b, key), seen(a, key), seen(c, key)  # b is the least recent when c arrives
    assert len(calls) == 3
    seen(a, key)
    assert len(calls) == 3
    seen(b, key)
    assert len(calls) == 4
