"""Ephemeral anchor ids for the Reflector (om-reference §3.4, Mastra ``anchor-ids.ts``).

Why: before reflection every observation line gets a short positional id (``[O3]`` for a top-level line,
``[O3-N2]`` for the second nested line under it) so the Reflector can refer to concrete lines. The ids are
throw-away: they are stripped from the Reflector's output and before anything is shown to the Actor, so
``strip_anchor_ids(inject_anchor_ids(text)) == text`` for text that carried no anchors to begin with.

Lines that never get an id: blank lines, lines that already carry one, ``Date:`` headers, lines that are only
an XML tag (``<thread id="x">``, ``</observations>``), and the retrieval-mode group markup
(``## Group `id` `` headings and ``_range: `a:b`_`` lines).
"""

from __future__ import annotations

import re

from om_eval.om.js.text import JS_WHITESPACE, WS, js_trim, js_trim_start

__all__ = [
    "ANCHOR_ID_PATTERN",
    "anchor_depth",
    "inject_anchor_ids",
    "parse_anchor_id",
    "should_anchor_line",
    "strip_anchor_ids",
]

#: An anchor at the start of an already-trimmed line; group 1 is the id without brackets.
ANCHOR_ID_PATTERN = re.compile(rf"^\[(O[0-9]+(?:-N[0-9]+)?)\][{WS}]*")
_DATE_HEADER = re.compile(rf"^[{WS}]*Date:[{WS}]+")
_XML_TAG_ONLY = re.compile(rf"^[{WS}]*</?[a-z][^>]*>[{WS}]*\Z", re.IGNORECASE | re.ASCII)
_GROUP_HEADING = re.compile(rf"^[{WS}]*##[{WS}]+Group[{WS}]+`[^`]+`[{WS}]*\Z")
_GROUP_RANGE = re.compile(rf"^[{WS}]*_range:[{WS}]*`[^`]*`_[{WS}]*\Z")
#: Anchor at a line start (after any horizontal indentation) plus the horizontal whitespace after it.
_HORIZONTAL = WS.replace("\n", "")
_STRIP_PATTERN = re.compile(rf"(^|\n)([{_HORIZONTAL}]*)\[O[0-9]+(?:-N[0-9]+)?\][{_HORIZONTAL}]*")


def parse_anchor_id(line: str) -> str | None:
    """Return the anchor id (e.g. ``"O3-N2"``) that starts ``line``, or None.

    Args:
        line: A line with its indentation already removed.

    Returns:
        The id without brackets, or None when the line does not start with an anchor.
    """
    match = ANCHOR_ID_PATTERN.match(line)
    return match.group(1) if match else None


def should_anchor_line(line: str) -> bool:
    """Tell whether ``inject_anchor_ids`` gives this line an id.

    Args:
        line: One line of observations, indentation included.

    Returns:
        False for blank lines, already-anchored lines, ``Date:`` headers, lines that are only an XML tag, and
        retrieval-mode group headings / ``_range:`` lines; True otherwise.
    """
    return _anchorable(js_trim(line))


#: The first characters a trimmed line that gets no id can start with (an anchor, ``Date:``, a tag, a group heading
#: or range); any other line gets one without a pattern tried.
_MAY_SKIP = frozenset("[D<#_")
#: A line starting with none of these (and not empty) is an unindented line that gets an id.
_INDENTED_OR_MAY_SKIP = _MAY_SKIP | JS_WHITESPACE | {""}


def _anchorable(trimmed: str) -> bool:
    if not trimmed:
        return False
    if trimmed[0] not in _MAY_SKIP:
        return True
    if parse_anchor_id(trimmed) is not None or _DATE_HEADER.match(trimmed) or _XML_TAG_ONLY.match(trimmed):
        return False
    return not (_GROUP_HEADING.match(trimmed) or _GROUP_RANGE.match(trimmed))


def anchor_depth(line: str) -> int:
    """Nesting depth of a line: leading whitespace length // 2, a tab counting as two spaces.

    Args:
        line: One line of observations.

    Returns:
        0 for a top-level line, 1 for a line indented by 2 spaces (or one tab), and so on.
    """
    return _depth(_indentation(line))


def _indentation(line: str) -> str:
    return line[: len(line) - len(js_trim_start(line))]


def _depth(indentation: str) -> int:
    return len(indentation.replace("\t", "  ")) // 2


def _format_anchor(top_level: int, nested: int) -> str:
    return f"O{top_level}" if nested == 0 else f"O{top_level}-N{nested}"


def inject_anchor_ids(text: str) -> str:
    """Prefix every qualifying line with a positional anchor id.

    A top-level line (depth 0) increments the top-level counter ``k`` and resets the nested counter, giving
    ``[O<k>]``. A deeper line increments the nested counter ``m``, giving ``[O<k>-N<m>]``; when no top-level
    line has been seen yet, ``k`` is 1. The prefix and one space go right after the line's indentation.

    Args:
        text: Observation text (lines separated by ``\\n``).

    Returns:
        The text with anchors; other lines are left byte-for-byte unchanged.
    """
    if not text:
        return text
    lines = text.split("\n")
    top_level = 0
    nested = 0
    for index, line in enumerate(lines):
        if line[:1] not in _INDENTED_OR_MAY_SKIP:  # most lines: unindented, and no pattern can skip them
            top_level += 1
            nested = 0
            lines[index] = f"[O{top_level}] {line}"
            continue
        if not _anchorable(js_trim(line)):
            continue
        indentation = _indentation(line)
        if _depth(indentation) == 0:
            top_level += 1
            nested = 0
        else:
            top_level = max(top_level, 1)
            nested += 1
        lines[index] = f"{indentation}[{_format_anchor(top_level, nested)}] {line[len(indentation) :]}"
    return "\n".join(lines)


def strip_anchor_ids(text: str) -> str:
    """Remove anchor ids at line starts, keeping the indentation before them.

    Removes ``[O<k>]`` / ``[O<k>-N<m>]`` plus the horizontal whitespace after it when it is the first
    non-blank token of a line. Anchors anywhere else in a line are left alone.

    Args:
        text: Text that may carry anchors (typically Reflector output).

    Returns:
        The text without line-leading anchors.
    """
    if "[O" not in text:  # every anchor holds it; a memory without anchors is not scanned
        return text
    return _STRIP_PATTERN.sub(r"\1\2", text)
