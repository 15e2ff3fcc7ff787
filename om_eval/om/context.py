"""What the actor sees: observations made compact and dated, in one of two layouts (om-reference §2.8, §4.1).

Storage keeps the full observation text; only the copy shown to the actor is optimised (priority markers other
than 🔴/✅, bracketed asides and arrows removed) and annotated with relative dates computed from "now", which for
a benchmark question is the question date.

Layouts:

* ``chunked`` (1.10): preamble and instructions, the other-conversations block, a bare ``<observations>``
  marker, one system message per observation chunk (split on message boundaries, so the prompt grows only at
  its tail), then the continuity hints;
* ``single`` (benchmark era, 1.1): everything in one system message with a closing ``</observations>``.

Both end with the continuation reminder as a user message. Without observations there are no memory messages at
all, as in 1.x.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from om_eval.om.anchors import strip_anchor_ids
from om_eval.om.config import RetrievalMode
from om_eval.om.dates import BOUNDARY_PATTERN, annotate_observations
from om_eval.om.groups import render_groups
from om_eval.om.history_lines import format_history_lines
from om_eval.om.js.text import WS, js_trim, js_trim_end, js_trim_start
from om_eval.om.observer import format_messages
from om_eval.om.prompts import load_prompts
from om_eval.om.recall.schema import recall_instructions
from om_eval.om.records import Message
from om_eval.om.rules import RELEASE_RULES, EngineRules

#: Per-part character cap for other threads' raw messages shown to the actor.
OTHER_CONVERSATION_PART_CHARS = 500

# 1.10's rules (checked against the package by tests/om/test_mastra_differential.py). Bracketed asides go, with
# any text up to the next "]" (line breaks too), except those that open with digits and spaces, then
# "items collapsed" (the "[5 items collapsed - ID: ...]" markers); markdown link labels go as well.
_LOW_PRIORITY = re.compile(rf"(?:🟡|🟢)[{WS}]*")
_BRACKETED = re.compile(rf"\[(?![0-9{WS}]*items collapsed)[^\]]+\]")
_BRACKETED_NOT_LINK = re.compile(rf"\[(?![0-9{WS}]*items collapsed)[^\]]+\](?!\()")  # 1.27+: link labels stay
_SPACES = re.compile(r" {2,}")
_BLANK_RUNS = re.compile(r"\n{3,}")


def optimize_for_context(text: str, *, keep_link_labels: bool = False) -> str:
    """Make observations compact for the actor (§2.8); storage keeps the original.

    Strips anchor ids, drops 🟡/🟢 with the whitespace after them (🔴 and ✅ stay), removes bracketed asides
    except ``[N items collapsed …]`` markers (and, with ``keep_link_labels`` as in 1.27+, any bracket that an
    opening parenthesis follows: a markdown link's label), turns ``->`` and the whitespace around it into one
    space, squeezes runs of spaces and of 3+ line feeds, and trims (JS ``trim``).
    """
    # Each rewrite runs only when the text holds the literal its pattern needs: a regex pass over a 130k-character
    # memory costs a millisecond or two, and the context is built for every question.
    text = strip_anchor_ids(text)
    if "🟡" in text or "🟢" in text:
        text = _LOW_PRIORITY.sub("", text)
    if "[" in text:
        text = (_BRACKETED_NOT_LINK if keep_link_labels else _BRACKETED).sub("", text)
    if "->" in text:
        text = _collapse_arrows(text)
    if "  " in text:
        text = _SPACES.sub(" ", text)
    if "\n\n\n" in text:
        text = _BLANK_RUNS.sub("\n\n", text)
    return js_trim(text)


def _collapse_arrows(text: str) -> str:
    """Each arrow with the whitespace runs on either side of it as one space, as replacing the regex
    ``[ws]*->[ws]*`` would, but by splitting at the arrows (they cannot overlap, and whitespace holds no ``-``)
    rather than trying a regex at every position of the text."""
    parts = text.split("->")
    if len(parts) == 1:
        return text
    return " ".join((js_trim_end(parts[0]), *map(js_trim, parts[1:-1]), js_trim_start(parts[-1])))


def split_observation_chunks(text: str) -> list[str]:
    """Observation text split on message-boundary delimiters, each chunk trimmed, empty chunks dropped."""
    trimmed = js_trim(text)
    if not trimmed:
        return []
    pieces = BOUNDARY_PATTERN.split(trimmed)[:: BOUNDARY_PATTERN.groups + 1]  # drop the captured timestamps
    return [chunk for chunk in map(js_trim, pieces) if chunk]


def format_other_conversations(threads: Mapping[str, Sequence[Message]], *, line_history: bool = False) -> str:
    """Other threads' unobserved messages, each in ``<other-conversation id="...">`` (ids as given); with
    ``line_history`` in 1.15+'s line format (:mod:`~om_eval.om.history_lines`)."""
    blocks = []
    write = format_history_lines if line_history else format_messages
    for thread_id, messages in threads.items():
        body = write(messages, OTHER_CONVERSATION_PART_CHARS)
        if body:
            blocks.append(f'<other-conversation id="{thread_id}">\n{body}\n</other-conversation>')
    return "\n\n".join(blocks)


@dataclass(frozen=True)
class ContextInputs:
    """Everything the context is built from."""

    observations: str
    now: datetime
    other_conversations: Mapping[str, Sequence[Message]] = field(default_factory=dict)
    current_task: str | None = None
    suggested_response: str | None = None
    rules: EngineRules = RELEASE_RULES["v1_10"]
    """Whose rules the context follows (the memory's :class:`~om_eval.om.rules.EngineRules`)."""
    retrieval: RetrievalMode = "off"
    """Retrieval mode (``om.retrieval``): observation groups shown with their ranges, and the recall instructions."""
    retrieval_instructions: str | None = None
    retrieval_search: bool = False
    """Retrieval mode: the tool also offers ``mode="search"`` (``om.retrieval_search``)."""

    @property
    def keep_link_labels(self) -> bool:
        """1.27+: markdown link labels stay in the observations shown."""
        return self.rules.keep_link_labels

    @property
    def line_history(self) -> bool:
        """1.15+: other conversations in the line format."""
        return self.rules.history_lines

    @property
    def system_reminders(self) -> bool:
        """1.11+: the instructions explain ``<system-reminder>`` messages, and the reminder is the shorter one."""
        return self.rules.system_reminders


def _instructions(texts: Mapping[str, str], layout: str, inputs: ContextInputs) -> str:
    keys = ["use_specifics", "knowledge_updates", "planned_actions"]
    if layout == "chunked":
        keys.append("most_recent_input")
    if inputs.system_reminders:
        keys.append("system_reminders")
    text = "\n\n".join(texts[key] for key in keys)
    if inputs.retrieval != "off":
        text += "\n\n" + recall_instructions(inputs.retrieval, inputs.retrieval_instructions, inputs.retrieval_search)
    return text


def _shown_observations(inputs: ContextInputs) -> str:
    """The observations as the actor reads them: in retrieval mode its groups as headed sections, kept whole (1.31
    optimises only memory without groups), else optimised (§2.8)."""
    grouped = render_groups(inputs.observations) if inputs.retrieval != "off" else None
    return grouped if grouped is not None else optimize_for_context(inputs.observations,
                                                                     keep_link_labels=inputs.keep_link_labels)


def dated_observations(inputs: ContextInputs) -> list[str]:
    """The observations as the actor reads them, dated relative to ``inputs.now`` and split into chunks on message
    boundaries (the whole text is optimised and annotated before it is split, so gap markers between chunks
    survive)."""
    return split_observation_chunks(annotate_observations(_shown_observations(inputs), inputs.now))


def _other_block(texts: Mapping[str, str], inputs: ContextInputs) -> str | None:
    body = format_other_conversations(inputs.other_conversations, line_history=inputs.line_history)
    if not body:
        return None
    return (
        f"{texts['other_conversations_intro']}\n\n"
        f"START_OTHER_CONVERSATIONS_BLOCK\n{body}\nEND_OTHER_CONVERSATIONS_BLOCK"
    )


def _hints(inputs: ContextInputs) -> list[str]:
    hints = []
    if inputs.current_task:
        hints.append(f"<current-task>\n{inputs.current_task}\n</current-task>")
    if inputs.suggested_response:
        hints.append(f"<suggested-response>\n{inputs.suggested_response}\n</suggested-response>")
    return hints


def continuation_reminder(*, short: bool = False) -> dict[str, str]:
    """The user-role reminder that the history continues from memory: 1.1-1.10's, or (``short``) 1.11+'s."""
    text = load_prompts("context")["continuation_reminder_short" if short else "continuation_reminder"]
    return {"role": "user", "content": f"<system-reminder>\n{text}\n</system-reminder>"}


def actor_memory_messages(inputs: ContextInputs, layout: str = "chunked") -> list[dict[str, str]]:
    """What the actor is given from memory: :func:`build_actor_context`, or nothing at all while there are no
    observations (1.1 and 1.10 alike inject no preamble, no other-conversations block and no reminder until the
    first observation exists; they test for an empty text, so whitespace alone still counts as memory)."""
    if inputs.observations:
        return build_actor_context(inputs, layout)
    if inputs.retrieval == "resource":  # 1.31: the tool can read threads no observation covers yet
        return [{"role": "system", "content": recall_instructions("resource", inputs.retrieval_instructions,
                                                                  inputs.retrieval_search)}]
    return []


def build_actor_context(inputs: ContextInputs, layout: str = "chunked") -> list[dict[str, str]]:
    """The memory messages placed before the conversation's unobserved tail (1.x's formatting of them)."""
    texts = load_prompts("context")
    shown = dated_observations(inputs)
    other = _other_block(texts, inputs)
    if layout == "single":
        parts = ["\n" + texts["preamble"]]
        if shown:
            parts.append("<observations>\n" + "\n\n".join(shown) + "\n</observations>")
        parts.append(_instructions(texts, layout, inputs))
        if other:
            parts.append(other)
        parts += _hints(inputs)
        messages = [{"role": "system", "content": "\n\n".join(parts)}]
    elif layout == "chunked":
        messages = [{"role": "system", "content": texts["preamble"] + "\n\n" + _instructions(texts, layout, inputs)}]
        if other:
            messages.append({"role": "system", "content": other})
        if shown:
            messages.append({"role": "system", "content": "<observations>"})
            messages += [{"role": "system", "content": chunk} for chunk in shown]
        messages += [{"role": "system", "content": hint} for hint in _hints(inputs)]
    else:
        raise ValueError(f"context_layout={layout!r} is invalid: allowed values are chunked, single")
    if inputs.observations.strip():
        messages.append(continuation_reminder(short=inputs.system_reminders))
    return messages
