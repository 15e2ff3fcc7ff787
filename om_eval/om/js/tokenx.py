"""The ``tokenx`` token estimate that Mastra's OM counts thresholds with from 1.7 on, in our own code.

Why it matters: OM compares *estimated* tokens with its thresholds, so the estimator decides when the Observer and
Reflector run. ``@mastra/memory`` 1.7+ counts with tokenx's ``estimateTokenCount`` (default options): 1.10.0 asked
for ``^1.3.0``, which resolved to 1.3.0 when it was published (2026-03-30; 1.4.0 came in July), and 1.31.0 bundles
1.3.0 itself. That release is reproduced here (``tests/om/js/test_tokenx_differential.py`` checks it against the npm
package). It counts English at roughly one token per six letters of a word plus one per short word or
punctuation run, so it usually gives more tokens than ``o200k_base`` on prose.

The rules, applied to each piece of the text split at runs of whitespace and at runs of ASCII punctuation (the runs
themselves are pieces too):

* whitespace: 0;
* any CJK, kana, Hangul or full-width character: one token per character (code point);
* a number (``12``, ``3.5``, ``1,000``): 1;
* at most 3 UTF-16 units: 1;
* contains ASCII punctuation: half its length, rounded up;
* otherwise its UTF-16 length divided by a characters-per-token ratio, rounded up: 3 when it holds a German or a
  French/Spanish accented letter, 3.5 for a Polish/Czech one, else 6.

JavaScript semantics kept: ``\\s`` is JS's set (``jstext.WS``), ``\\d`` is ASCII, lengths are UTF-16 units, and the
letter classes match case-insensitively as V8 does without the ``u`` flag (a character matches when its simple
upper-case form, as a single UTF-16 unit, equals one of the class's).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from om_eval.om.js.text import WS, utf16_len

VERSION = "1.3.0"
"""The tokenx release reproduced (what @mastra/memory 1.10.0 resolved and 1.31.0 bundles)."""

_PUNCTUATION = r"[.,!?;(){}\[\]<>:/\\|@#$%^&*+=`~_-]"
#: The pieces of the text split at runs of whitespace and of ASCII punctuation, less the whitespace runs (they
#: count 0): the punctuation runs and the text between separators. Half as many pieces to look up as a split.
_PIECES = re.compile(rf"[^{WS}{_PUNCTUATION[1:-1]}]+|{_PUNCTUATION}+")
_WHITESPACE = re.compile(rf"[{WS}]+")
_CJK = re.compile(
    "[\u4e00-\u9fff\u3400-\u4dbf\u3000-\u303f\uff00-\uffef\u30a0-\u30ff\u2e80-\u2eff\u31c0-\u31ef\u3200-\u32ff"
    "\u3300-\u33ff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\ud7b0-\ud7ff]"
)
_NUMERIC = re.compile(r"[0-9]+(?:[.,][0-9]+)*")
_HAS_PUNCTUATION = re.compile(_PUNCTUATION)
_SHORT_UNITS = 3
_DEFAULT_CHARS_PER_TOKEN = 6
#: (letters, characters per token), tried in order; letters match case-insensitively as V8 matches them.
_LANGUAGES = (
    ("äöüßẞ", 3),
    ("éèêëàâîïôûùüÿçœæáíóúñ", 3),
    ("ąćęłńóśźżěščřžýůúďťň", 3.5),
)


def _js_canonical(char: str) -> str:
    """V8's case folding for a non-``u`` ``i`` regex: the upper-case form when it is one unit, else itself."""
    upper = char.upper()
    if len(upper) != 1 or (ord(char) >= 128 and ord(upper) < 128):
        return char
    return upper


@lru_cache(maxsize=1)
def _language_patterns() -> tuple[tuple[re.Pattern[str], float], ...]:
    """Each letter class widened to every BMP character V8 would match with it, case-insensitively."""
    patterns = []
    for letters, ratio in _LANGUAGES:
        wanted = {_js_canonical(c) for c in letters}
        matching = sorted({c for c in letters} | {
            chr(code) for code in range(0x10000)
            if not 0xD800 <= code <= 0xDFFF and _js_canonical(chr(code)) in wanted
        })
        patterns.append((re.compile("[" + "".join(re.escape(c) for c in matching) + "]"), ratio))
    return tuple(patterns)


@lru_cache(maxsize=200_000)
def segment_tokens(segment: str) -> int:
    """The estimate of one piece of the split text (see the module docstring)."""
    if _WHITESPACE.fullmatch(segment):
        return 0
    if _CJK.search(segment):
        return len(segment)  # code points, as Array.from(...).length counts them
    if _NUMERIC.fullmatch(segment):
        return 1
    units = utf16_len(segment)
    if units <= _SHORT_UNITS:
        return 1
    if _HAS_PUNCTUATION.search(segment):
        return math.ceil(units / 2)
    # tokenx tests its alphanumeric class first, but both branches use the same ratio: one path is enough.
    for pattern, ratio in _language_patterns():
        if pattern.search(segment):
            return math.ceil(units / ratio)
    return math.ceil(units / _DEFAULT_CHARS_PER_TOKEN)


def estimate_tokens(text: str) -> int:
    """tokenx 1.3.0's ``estimateTokenCount(text)`` with its default options.

    Counted line by line: a line feed is whitespace, so no piece spans two lines and the total is the sum over
    lines. Observation texts are counted again and again with a few lines changed (truncation candidates, each new
    generation), so the per-line cache turns most of that work into lookups.
    """
    if not text:
        return 0
    return sum(map(_line_tokens, text.split("\n")))


# 16,384 lines: a memory's observations (recounted at every batch) stay; a message's lines, counted once, pass
# through (100,000 of them held 60 MB at 150 S-sized questions and saved no count).
@lru_cache(maxsize=1 << 14)
def _line_tokens(line: str) -> int:
    if line.isascii():
        return _ascii_line_tokens(line.encode("ascii"))
    return sum(map(segment_tokens, _PIECES.findall(line)))


_PUNCTUATION_BYTES = frozenset(b".,!?;(){}[]<>:/\\|@#$%^&*+=`~_-")
#: ``bytes.translate`` tables: punctuation to a space (leaves the word runs), everything else but punctuation to a
#: space (leaves the punctuation runs). ``bytes.split()`` splits at exactly JS's ASCII whitespace (Python's
#: ``str.split()`` would also split at U+001C..U+001F).
_WORDS_ONLY = bytes(32 if byte in _PUNCTUATION_BYTES else byte for byte in range(256))
_PUNCTUATION_ONLY = bytes(byte if byte in _PUNCTUATION_BYTES else 32 for byte in range(256))


def _ascii_line_tokens(line: bytes) -> int:
    """:func:`_line_tokens` of an ASCII line, with the same pieces found by two byte translations instead of a
    regex (a message's lines are mostly new, so this is the work of counting a conversation): a third of the time.
    No ASCII piece holds a CJK or accented letter, so only the length, number and punctuation rules apply."""
    return (sum(map(_ascii_word_tokens, line.translate(_WORDS_ONLY).split()))
            + sum(map(_ascii_punctuation_tokens, line.translate(_PUNCTUATION_ONLY).split())))


@lru_cache(maxsize=1 << 16)  # words repeat; a bigger cache held more memory than it saved time
def _ascii_word_tokens(piece: bytes) -> int:
    """A run of ASCII letters, digits and other non-punctuation (:func:`segment_tokens`'s rules)."""
    if piece.isdigit() or len(piece) <= _SHORT_UNITS:
        return 1
    return math.ceil(len(piece) / _DEFAULT_CHARS_PER_TOKEN)


def _ascii_punctuation_tokens(piece: bytes) -> int:
    """A run of ASCII punctuation: one token up to three characters, else half its length rounded up."""
    return 1 if len(piece) <= _SHORT_UNITS else math.ceil(len(piece) / 2)


class TokenxCounter:
    """A :class:`~om_eval.om.tokens.TokenCounter` with tokenx's estimate (Mastra 1.7+, so 1.10 and 1.31)."""

    name = f"tokenx/{VERSION}"

    def count_text(self, text: str) -> int:
        return estimate_tokens(text)
