"""File names from free-form ids: always valid, never shared by two ids, stable for safe short ids."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from om_eval.common.files import READABLE_CHARS, safe_file_name


def test_short_safe_ids_keep_their_name() -> None:
    assert safe_file_name("gpt4_9b807f87_abs") == "gpt4_9b807f87_abs"
    assert safe_file_name("5ed4ff79") == "5ed4ff79"


def test_ids_that_differ_only_in_unsafe_characters_get_different_names() -> None:
    assert safe_file_name("a.b") != safe_file_name("a_b")
    assert safe_file_name("a/b") != safe_file_name("a_b")


@given(st.text(min_size=1, max_size=600))
def test_every_id_gives_a_short_plain_name(identifier: str) -> None:
    name = safe_file_name(identifier)
    assert len(name.encode("utf-8")) <= READABLE_CHARS + 17
    assert "/" not in name and "\0" not in name and name not in (".", "..")
    assert safe_file_name(identifier) == name


@given(st.text(min_size=1, max_size=300), st.text(min_size=1, max_size=300))
def test_distinct_ids_get_distinct_names(first: str, second: str) -> None:
    if first != second:
        assert safe_file_name(first) != safe_file_name(second)


def test_short_hash_is_the_sha256_prefix_of_the_utf8_text() -> None:
    import hashlib

    from om_eval.common.files import short_hash

    assert short_hash("é") == hashlib.sha256("é".encode()).hexdigest()[:16] == short_hash("é".encode())
    assert len(short_hash(b"x", 12)) == 12


def test_an_atomic_write_replaces_the_file_whole_or_not_at_all(tmp_path) -> None:
    import pytest

    from om_eval.common.files import atomic_write, atomic_writer

    target = tmp_path / "deep" / "file.txt"
    atomic_write(target, "first")
    with pytest.raises(RuntimeError), atomic_writer(target) as handle:
        handle.write("half of the second")
        raise RuntimeError("killed mid-write")
    assert target.read_text(encoding="utf-8") == "first"
    assert [p.name for p in target.parent.iterdir()] == ["file.txt"]  # no temporary file left behind
    atomic_write(target, b"\x00bytes", fsync=True)
    assert target.read_bytes() == b"\x00bytes"


def test_a_lock_is_exclusive_between_descriptors_and_freed_by_closing(tmp_path) -> None:
    import os

    from om_eval.common.files import open_lock, try_lock

    first, second = open_lock(tmp_path / "x.lock"), open_lock(tmp_path / "x.lock")
    assert try_lock(first) and not try_lock(second)
    os.close(first)
    assert try_lock(second)
    os.close(second)
