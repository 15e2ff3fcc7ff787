"""JavaScript string semantics that Mastra's text handling depends on.

Why: Mastra's observation helpers are regexes, ``trim()`` calls and ``.length`` checks evaluated by V8, and the
memory text they produce is what the Observer, Reflector and Actor read. Python's defaults differ in small ways
that matter on real model output:

* JS ``\\s`` is a fixed set (ASCII whitespace, the Unicode space separators, U+2028/U+2029 and U+FEFF); Python's
  also takes U+001C..U+001F and U+0085 but not U+FEFF. ``trim()`` strips the JS set.
* JS ``\\d``, ``\\w`` and ``\\b`` are ASCII-only, and case-insensitive matching never maps a non-ASCII letter to an
  ASCII one (Python's does: "ſ" matches "s"); the modules that mirror Mastra compile with ``re.ASCII``.
* With the ``m`` flag, ``^`` and ``$`` see a line break at LF, CR, U+2028 and U+2029, so a lone CR ends a line;
  Python's ``re.MULTILINE`` knows only LF. `LINE_START` and `LINE_END` are the JS anchors.
* ``.length`` and ``.slice`` count UTF-16 code units: an emoji outside the BMP counts 2.
"""

from __future__ import annotations

from typing import Final

__all__ = ["JS_WHITESPACE", "LINE_END", "LINE_START", "LINE_TERMINATORS", "WS", "js_trim", "js_trim_end",
           "js_trim_start", "utf16_len", "utf16_prefix"]

#: The characters of JS ``\s``, for use inside a regex character class.
WS: Final = "\t\n\x0b\x0c\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_WS_CHARS: Final = "\t\n\x0b\x0c\r \u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + (
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
#: The same characters as a set, for tests of one character.
JS_WHITESPACE: Final = frozenset(_WS_CHARS)
#: JS line terminators.
LINE_TERMINATORS: Final = "\n\r\u2028\u2029"
#: JS ``^`` under the ``m`` flag: the start of the text or just after a line terminator.
LINE_START: Final = rf"(?<![^{LINE_TERMINATORS}])"
#: JS ``$`` under the ``m`` flag: the end of the text or just before a line terminator.
LINE_END: Final = rf"(?![^{LINE_TERMINATORS}])"


def js_trim(text: str) -> str:
    """``String.prototype.trim``: strip JS whitespace (not U+001C..U+001F or U+0085) from both ends."""
    return text.strip(_WS_CHARS)


def js_trim_start(text: str) -> str:
    """``String.prototype.trimStart``: strip JS whitespace from the start."""
    return text.lstrip(_WS_CHARS)


def js_trim_end(text: str) -> str:
    """``String.prototype.trimEnd``: strip JS whitespace from the end."""
    return text.rstrip(_WS_CHARS)


def utf16_len(text: str) -> int:
    """``.length`` of the JS string: code points above U+FFFF count 2."""
    if text.isascii():
        return len(text)
    # The encoder counts in C; "surrogatepass" keeps a lone surrogate (one JS unit) countable.
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_prefix(text: str, units: int) -> str:
    """``text.slice(0, units)`` in UTF-16 code units, except that a surrogate pair is never split.

    Where JS would cut between the two halves of a pair and keep a lone high surrogate (text no UTF-8 encoder
    accepts), the whole character is left out instead, so the result may be one unit shorter.
    """
    if units <= 0:
        return ""
    if text.isascii():
        return text[:units]
    count = 0
    for index, char in enumerate(text):
        width = 2 if ord(char) > 0xFFFF else 1
        if count + width > units:
            return text[:index]
        count += width
    return text
