"""Obscured thread ids: what a model sees instead of a thread id."""

from __future__ import annotations

import pytest

from om_eval.om.config import ConfigError, OMConfig
from om_eval.om.threads import (
    merge_thread_section_as_mastra,
    obscure_thread_id,
    replace_or_append_thread_section,
)
from tests.om.identity_view import memory_view


def test_xxh32_ids_are_what_mastra_shows() -> None:
    # Values printed by xxhash-wasm's h32ToString, which @mastra/memory 1.x uses (zero-padded to 8 digits).
    assert obscure_thread_id("c20261124-s0") == "8a903dd5"
    assert obscure_thread_id("session-0007") == "a13efb6b"
    assert obscure_thread_id("t3") == "0cc77027"
    assert obscure_thread_id("t9") == "03bf22bd"


def test_blake2b_ids_stay_available_and_differ() -> None:
    assert obscure_thread_id("t3", "blake2b") != obscure_thread_id("t3")
    assert len(obscure_thread_id("t3", "blake2b")) == 8


def test_the_hash_is_stored_only_with_obscured_ids() -> None:
    assert "thread_id_hash" not in memory_view(OMConfig())  # configs with raw ids keep their hash
    assert memory_view(OMConfig(obscure_thread_ids=True))["thread_id_hash"] == "xxh32"
    assert OMConfig.from_dict(OMConfig(obscure_thread_ids=True, thread_id_hash="blake2b").to_dict()) == OMConfig(
        obscure_thread_ids=True, thread_id_hash="blake2b")
    with pytest.raises(ConfigError, match="thread_id_hash"):
        OMConfig(thread_id_hash="md5")  # type: ignore[arg-type]  # an invalid hash on purpose


class TestMergeAsMastra:
    """1.10's and 1.31's ``replaceOrAppendThreadSection`` (used under ``mastra_release=v1_31``)."""

    SEP = "\n\n"

    def test_only_the_first_section_of_the_thread_is_looked_at(self) -> None:
        existing = ('<thread id="a">\nDate: May 1, 2023\n* x\n</thread>\n\n'
                    '<thread id="a">\nDate: May 2, 2023\n* y\n</thread>')
        merged = merge_thread_section_as_mastra(existing, "a", "Date: May 2, 2023\n* z", self.SEP)
        assert merged == existing + self.SEP + '<thread id="a">\nDate: May 2, 2023\n* z\n</thread>'

    def test_a_date_anywhere_in_the_first_section_merges(self) -> None:
        existing = '<thread id="a">\nDate: May 1, 2023\n* x\nDate: May 2, 2023\n* y\n</thread>'
        merged = merge_thread_section_as_mastra(existing, "a", "<thread id=\"a\">Date: May 2, 2023\n* z", self.SEP)
        assert merged == '<thread id="a">\nDate: May 1, 2023\n* x\nDate: May 2, 2023\n* y\n* z\n</thread>'

    def test_nothing_observed_still_appends_an_empty_section(self) -> None:
        assert merge_thread_section_as_mastra("* old", "b", "", self.SEP) == '* old\n\n<thread id="b">\n\n</thread>'
        assert replace_or_append_thread_section("* old", "b", "", self.SEP) == "* old"
