"""JavaScript string rules: UTF-16 lengths and prefixes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from om_eval.om.js.text import utf16_len, utf16_prefix

# Any code point, lone surrogates included (JSON can carry them into a message).
_text = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=60)


@given(_text)
def test_utf16_len_counts_code_units(text: str) -> None:
    assert utf16_len(text) == sum(2 if ord(char) > 0xFFFF else 1 for char in text)


@given(_text, st.integers(min_value=-2, max_value=130))
def test_utf16_prefix_never_splits_a_pair_and_fits(text: str, units: int) -> None:
    prefix = utf16_prefix(text, units)
    assert text.startswith(prefix)
    assert utf16_len(prefix) <= max(units, 0)
    assert utf16_len(prefix) >= min(max(units, 0), utf16_len(text)) - 1  # at most half a pair short
