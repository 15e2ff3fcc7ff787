"""Bounds on what one ``recall`` call may send and get back: om-eval's guard against hostile or broken calls.

1.31 has none of these. Its agent loop parses the model's arguments in JavaScript, where ``1e400`` is ``Infinity``
and deep nesting is cheap, and hands back whatever the tool returns. Python breaks on the same input instead
(``OverflowError``, ``RecursionError``), and echoed text grows a prompt without limit, so OM's recall tool
(:mod:`om_eval.systems.om.recall`) refuses such arguments before the tool runs, with an error the model reads,
and the actor's loop (:mod:`om_eval.bench.tool_loop`) cuts what it echoes and returns.
Arguments within these limits reach the tool exactly as 1.31's would. So the port and the differential test of
:mod:`om_eval.om.recall.tool` stay as they are, and normal calls are never touched.

Why these numbers:

* :data:`MAX_ARGUMENTS_CHARS` (4,000): the tool's arguments are ids, a few options and at most a search query. The
  longest normal call is well under 300 characters. Arguments past the limit are refused unread, so parsing never
  meets a huge text.
* :data:`MAX_ARGUMENTS_DEPTH` (32): normal arguments are one flat object (depth 1). Refusing deeper text before
  ``json.loads`` keeps every recursive step (parsing, validation, ``JSON.stringify`` of the arguments in a
  validation error) far from Python's recursion limit.
* :data:`MAX_SAFE_INTEGER` (2**53 - 1): JavaScript's ``Number.MAX_SAFE_INTEGER``. A number past it has no exact
  JSON meaning for 1.31 either, and Python cannot turn it into a float.
* :data:`MAX_ECHO_CHARS` (200): the most of an argument a message repeats back (the 200 characters of 1.31's own
  "Provided arguments" in a validation error).
* :data:`RESULT_TOKEN_CAP` (8,000): four times the tool's own 2,000-token page budget. No page, part chunk or
  search result the tool lays out is ever cut: with the JSON around it, any shipped token counter puts the largest
  at 3,700 (emoji-dense text in ``o200k_base``). Only output the tool does not bound itself gets cut.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from om_eval.om.recall.schema import INTEGER_BOUNDS

MAX_ARGUMENTS_CHARS = 4_000
MAX_ARGUMENTS_DEPTH = 32
MAX_SAFE_INTEGER = 2**53 - 1
MAX_ECHO_CHARS = 200
RESULT_TOKEN_CAP = 8_000


class ArgumentsRefused(ValueError):
    """Arguments the guard will not hand to the tool; the message says why, for the model to read."""


def shown(text: str, max_chars: int = MAX_ECHO_CHARS) -> str:
    """``text`` as a message repeats it: whole up to ``max_chars``, otherwise cut with an ellipsis and a note."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}\u2026 (cut: {len(text):,} characters in all)"


def nesting_depth(text: str, limit: int) -> int:
    """How deep the brackets of JSON ``text`` nest outside strings; the count stops at ``limit + 1``."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif char in "]}":
            depth -= 1
    return deepest


def _number_problem(name: str, value: Any) -> str | None:
    """Why ``value`` (under top-level key ``name``) is out of reach, or ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        beyond = True
    elif isinstance(value, (int, float)):
        beyond = abs(value) > MAX_SAFE_INTEGER
    else:
        return None
    if not beyond:
        return None
    if name not in INTEGER_BOUNDS:
        return f"{shown(name)} holds a number beyond what JSON carries exactly (\u00b1{MAX_SAFE_INTEGER:,})"
    low, high = INTEGER_BOUNDS[name]
    return f"{name} must be a whole number between {low:,} and {MAX_SAFE_INTEGER if high is None else high:,}"


def _numbers(value: Any) -> list[Any]:
    """Every number inside ``value`` (depth is already bounded by :data:`MAX_ARGUMENTS_DEPTH`)."""
    if isinstance(value, dict):
        return [n for item in value.values() for n in _numbers(item)]
    if isinstance(value, list):
        return [n for item in value for n in _numbers(item)]
    return [value] if isinstance(value, (int, float)) else []


def parse_arguments(text: str) -> dict[str, Any]:
    """The JSON object of a call's ``arguments`` text (empty text is ``{}``).

    Raises:
        ArgumentsRefused: the text is longer than :data:`MAX_ARGUMENTS_CHARS`, nests deeper than
            :data:`MAX_ARGUMENTS_DEPTH`, is not JSON, is not an object, or holds a number beyond
            :data:`MAX_SAFE_INTEGER` (or not finite).
    """
    text = text or "{}"
    if len(text) > MAX_ARGUMENTS_CHARS:
        raise ArgumentsRefused(f"the arguments are {len(text):,} characters long; at most {MAX_ARGUMENTS_CHARS:,} "
                               "are read: send a short JSON object")
    if nesting_depth(text, MAX_ARGUMENTS_DEPTH) > MAX_ARGUMENTS_DEPTH:
        raise ArgumentsRefused(f"the arguments nest more than {MAX_ARGUMENTS_DEPTH} levels deep: send a flat JSON "
                               "object of the tool's properties")
    try:
        arguments = json.loads(text)
    except ValueError as error:
        raise ArgumentsRefused(f"the arguments are not valid JSON ({shown(str(error))}); send a JSON object") \
            from None
    if not isinstance(arguments, dict):
        raise ArgumentsRefused("the arguments must be a JSON object")
    for name, value in arguments.items():
        problems = (_number_problem(name, number) for number in _numbers(value))
        problem = next((p for p in problems if p is not None), None)
        if problem is not None:
            raise ArgumentsRefused(problem)
    return arguments


def bound_result(text: str, count: Callable[[str], int], max_tokens: int = RESULT_TOKEN_CAP) -> str:
    """``text`` when ``count(text) <= max_tokens``; otherwise its longest prefix that, with a line saying it was cut,
    fits ``max_tokens``."""
    total = count(text)
    if total <= max_tokens:
        return text

    def candidate(chars: int) -> str:
        return (f"{text[:chars]}\n... [cut: the result was {total:,} tokens, over the {max_tokens:,}-token limit of "
                "one recall result; ask for less]")

    low, high, best = 0, len(text), candidate(0)
    while low <= high:
        middle = (low + high) // 2
        attempt = candidate(middle)
        if count(attempt) <= max_tokens:
            best, low = attempt, middle + 1
        else:
            high = middle - 1
    return best
