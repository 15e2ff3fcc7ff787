"""The ``recall`` tool's input schema and what the model is told about the tool (retrieval mode, 1.31.0).

Split from :mod:`om_eval.om.recall.tool`, which runs a call: here are the properties the tool takes, the objects 1.31
returns for arguments outside them (its validator's messages, in its order), the tool's definition offered to a
model and the actor's instructions about it. The constraints are 1.31's; every description is in our words
(``om_eval/om/prompts/recall.toml``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from om_eval.om.js.json import js_stringify
from om_eval.om.js.text import js_trim, utf16_len
from om_eval.om.prompts import load_prompts

RecallScope = Literal["resource", "thread"]

TOOL_NAME = "recall"
MAX_PAGE = 50
MAX_MESSAGES_LIMIT = 20
LOG_ARGUMENTS_CHARS = 200
PART_TYPES = ("text", "tool-call", "tool-result", "reasoning", "image", "file")


# -- arguments ------------------------------------------------------------------------------------------------------

INTEGER_BOUNDS = {"page": (-MAX_PAGE, MAX_PAGE), "limit": (1, MAX_MESSAGES_LIMIT), "partIndex": (0, None),
                  "charOffset": (0, None)}
"""The integer properties and their (minimum, maximum) in 1.31's schema (``None``: no maximum)."""
_ENUMS = {"mode": ("messages", "threads"), "anchor": ("start", "end"), "detail": ("low", "high"),
          "partType": PART_TYPES}
_NON_EMPTY = ("threadId", "cursor", "toolName", "query")
SEARCH_MODE = "search"
MAX_SEARCH_HITS = 20
DEFAULT_SEARCH_HITS = 10


def schema_properties(scope: RecallScope, search: bool = False) -> tuple[str, ...]:
    """The tool's input properties, in the schema's order (``query`` only when search is offered)."""
    head = ("mode", "threadId", "before", "after") if scope == "resource" else ("mode",)
    query = ("query",) if search else ()
    return (*head, *query, "cursor", "anchor", "page", "limit", "detail", "partType", "toolName", "partIndex",
            "charOffset")


def _modes(search: bool) -> tuple[str, ...]:
    return (*_ENUMS["mode"], SEARCH_MODE) if search else _ENUMS["mode"]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _property_errors(name: str, value: Any, search: bool = False) -> list[str]:
    if name in INTEGER_BOUNDS:
        errors = []
        if not _is_number(value) or not (isinstance(value, int) or float(value).is_integer()):
            errors.append("must be integer")
        if _is_number(value):
            low, high = INTEGER_BOUNDS[name]
            if high is not None and value > high:
                errors.append(f"must be <= {high}")
            if value < low:
                errors.append(f"must be >= {low}")
        return errors
    errors = [] if isinstance(value, str) else ["must be string"]
    if name in _NON_EMPTY and isinstance(value, str) and utf16_len(value) < 1:
        errors.append("must NOT have fewer than 1 characters")
    allowed = _modes(search) if name == "mode" else _ENUMS.get(name)
    if allowed is not None and value not in allowed:
        errors.append("must be equal to one of the allowed values")
    return errors


def validation_error(arguments: Mapping[str, Any], scope: RecallScope, search: bool = False) -> dict[str, Any] | None:
    """The object the tool returns for arguments outside its schema (``None`` when they fit).

    Nulls count as absent when everything else fits; when something else does not, they are reported too, as the
    package's validator does (it reports the issues of its first pass, before it drops nulls and tries again).
    """
    issues = [(name, error) for name in schema_properties(scope, search) if name in arguments
              for error in _property_errors(name, arguments[name], search)]
    if not [issue for issue in issues if arguments[issue[0]] is not None]:
        return None
    lines = "\n".join(f"- {name}: {error}" for name, error in issues)
    shown = js_stringify(dict(arguments), 2)
    if utf16_len(shown) > LOG_ARGUMENTS_CHARS:
        shown = _js_slice(shown, LOG_ARGUMENTS_CHARS) + "... (truncated)"
    fields: dict[str, Any] = {}
    for name, error in issues:
        fields.setdefault(name, {"errors": [], "fields": {}})["errors"].append(error)
    return {
        "error": True,
        "message": "Tool input validation failed for recall. Please fix the following errors and try again:\n"
                   f"{lines}\n\nProvided arguments: {shown}",
        "validationErrors": {"errors": [], "fields": fields},
    }


def _js_slice(text: str, units: int) -> str:
    """``text.slice(0, units)`` in UTF-16 units, even when it splits a pair (JSON.stringify then escapes the half)."""
    data = text.encode("utf-16-le", "surrogatepass")[:2 * units]
    return data.decode("utf-16-le", "surrogatepass")


# -- what the actor is told -------------------------------------------------------------------------------------------

def recall_instructions(scope: RecallScope, extra: str | None = None, search: bool = False) -> str:
    """The actor's instructions about the tool (our wording of 1.31's points), for ``scope`` and with or without
    ``mode="search"``; ``extra`` guidance is added under its own heading, as 1.31 adds ``retrieval.instructions``."""
    texts = load_prompts("recall")
    keys = ["instructions_intro", "instructions_when", f"instructions_modes_{scope}",
            *(["instructions_search"] if search else []), "instructions_cursor",
            "instructions_detail", "instructions_not_needed", "instructions_close"]
    text = "\n\n".join(js_trim(texts[key]) for key in keys)
    if extra and js_trim(extra):
        text += f"\n\n{js_trim(texts['extra_heading'])}\n{js_trim(extra)}"
    return text


def _integer(description: str, minimum: int, maximum: int | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer", "minimum": minimum}
    if maximum is not None:
        schema["maximum"] = maximum
    return {**schema, "description": description}


def tool_definition(scope: RecallScope, search: bool = False) -> dict[str, Any]:
    """The tool as a model is offered it (an OpenAI-style function; litellm translates it for other providers): the
    constraints of 1.31's input schema, described in our words; ``search`` adds ``mode="search"`` and ``query``."""
    texts = load_prompts("recall")
    say = texts["parameters"]
    text: dict[str, Any] = {"type": "string"}
    mode_text = say[f"mode_{scope}"] + (" " + say["mode_search"] if search else "")
    properties: dict[str, Any] = {
        "mode": {**text, "enum": list(_modes(search)), "description": mode_text},
    }
    if scope == "resource":
        properties |= {
            "threadId": {**text, "minLength": 1, "description": say["threadId"]},
            "before": {**text, "description": say["before"]},
            "after": {**text, "description": say["after"]},
        }
    if search:
        properties["query"] = {**text, "minLength": 1, "description": say["query"]}
    properties |= {
        "cursor": {**text, "minLength": 1, "description": say["cursor"]},
        "anchor": {**text, "enum": list(_ENUMS["anchor"]), "description": say["anchor"]},
        "page": _integer(say["page"], -MAX_PAGE, MAX_PAGE),
        "limit": _integer(say["limit"], 1, MAX_MESSAGES_LIMIT),
        "detail": {**text, "enum": list(_ENUMS["detail"]), "description": say["detail"]},
        "partType": {**text, "enum": list(PART_TYPES), "description": say["partType"]},
        "toolName": {**text, "minLength": 1, "description": say["toolName"]},
        "partIndex": _integer(say["partIndex"], 0),
        "charOffset": _integer(say["charOffset"], 0),
    }
    description = js_trim(texts[f"description_{scope}"]) + (" " + js_trim(texts["description_search"]) if search
                                                             else "")
    return {"type": "function", "function": {
        "name": TOOL_NAME, "description": description,
        "parameters": {"type": "object", "properties": properties},
    }}
