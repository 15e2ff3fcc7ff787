"""Baseline readers' layout: a long-context model answers from the chat sessions themselves, with no memory system.

These are LongMemEval's own reference points (longmemeval-reference §2.4, §3): ``full_context`` shows the reader
the whole haystack, ``oracle`` only the evidence sessions (``answer_session_ids``). Both run through the memory
seam as systems (:mod:`om_eval.systems.readers`); this module holds their settings and layout. The layout follows the
official reader in our own words (``prompts/baseline.toml``): one user message with the instructions, the
sessions oldest first (each under a numbered header with its date, the turns as JSON or as ``role: text``
blocks, ``has_answer`` never shown), then the current date and the question.

**Truncation, and which end is cut.** The history is cut to ``context_tokens - max_tokens - 1000`` tokens, as
upstream does. Upstream keeps the *first* tokens of the history (``tokens[:max_retrieval_length]``), so when a
haystack is too long the newest sessions are the ones lost, and the last one shown may end mid-turn. ``keep:
start`` (the default) does the same, because the paper's numbers were measured that way; ``keep: end`` keeps the
newest tokens instead (the better choice for knowledge updates on a small-context reader, but not the paper's
setting). With GPT-4o's 128k window and LongMemEval_S (about 115k tokens per haystack) the cut rarely happens.

**Counting.** Tokens are counted with the project's counter (``tiktoken`` = ``o200k_base``, the encoding
upstream uses for GPT models). The cut is found per session first (whole sessions that fit), then by binary
search on the characters of the session that straddles the budget, and checked on the whole text at the end.

Not done: Chain-of-Note (upstream's recommended setting adds a separate note-taking call per session; its
numbers are higher, 0.924 oracle with GPT-4o against 0.870 without) and the ``useronly`` option.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from om_eval.common.files import short_hash
from om_eval.data.records import HaystackSession
from om_eval.memory.view import SessionView
from om_eval.om.config import ConfigError
from om_eval.om.tokens import TokenCounter

READERS = ("none", "full_context", "oracle")
FORMATS = ("json", "nl")
KEEPS = ("start", "end")
#: Tokens upstream leaves free besides the answer (instructions, question, chat-template overhead).
RESERVED_TOKENS = 1000
#: Evidence statuses of a baseline run (the OM statuses are in :mod:`om_eval.bench.trace`).
IN_READER_PROMPT = "in_reader_prompt"
TRUNCATED_AWAY = "truncated_away"
#: How those statuses read to a person.
EVIDENCE_STATUS_TEXT = {IN_READER_PROMPT: "shown to the reader", TRUNCATED_AWAY: "cut by the context limit"}


@dataclass(frozen=True)
class BaselineConfig:
    """The ``baseline`` config group. ``reader="none"`` means an OM run (the other fields are then unused)."""

    reader: str = "none"
    """``none`` (OM), ``full_context`` (the whole haystack) or ``oracle`` (evidence sessions only)."""
    context_tokens: int = 128_000
    """The reader's context window; the history gets ``context_tokens - max_tokens - 1000`` tokens."""
    max_tokens: int = 500
    """The reader's answer budget (upstream: 500 without chain-of-thought)."""
    format: str = "json"
    """How a session's turns are shown: ``json`` (the list of {role, content}) or ``nl`` (``role: text``)."""
    keep: str = "start"
    """Which end of an over-long history is kept: ``start`` (upstream: the newest part is cut) or ``end``."""
    tokenizer: str = "tiktoken"
    """The token counter of the budget (:func:`om_eval.om.tokens.make_counter` names)."""

    def __post_init__(self) -> None:
        for name, allowed in (("reader", READERS), ("format", FORMATS), ("keep", KEEPS)):
            value = getattr(self, name)
            if value not in allowed:
                raise ConfigError(f"baseline.{name}={value!r} is invalid: allowed values are {', '.join(allowed)}")
        for name in ("context_tokens", "max_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"baseline.{name}={value!r} is invalid: must be a whole number >= 1")
        if self.reader != "none" and self.history_budget < 1:
            raise ConfigError(f"baseline.context_tokens={self.context_tokens} leaves no room for the history: it "
                              f"must exceed baseline.max_tokens ({self.max_tokens}) + {RESERVED_TOKENS}")

    @property
    def enabled(self) -> bool:
        return self.reader != "none"

    @property
    def history_budget(self) -> int:
        """Tokens the sessions may take (upstream: context - generation length - 1000)."""
        return self.context_tokens - self.max_tokens - RESERVED_TOKENS

    @property
    def memory_key(self) -> str:
        """What a baseline run stores where an OM run stores its memory hash (``baseline:full_context``)."""
        return f"baseline:{self.reader}"


def baseline_from(data: Any) -> BaselineConfig:
    """The group as a :class:`BaselineConfig`; a missing group (configs stored before baselines) is ``none``."""
    return BaselineConfig(**dict(data)) if data else BaselineConfig()


@lru_cache(maxsize=1)
def baseline_prompts() -> dict[str, Any]:
    return tomllib.loads(resources.files("om_eval.bench.prompts").joinpath("baseline.toml").read_text("utf-8"))


def baseline_prompt_hash() -> str:
    """Identity of the reader's prompt file (its exact bytes)."""
    return short_hash(resources.files("om_eval.bench.prompts").joinpath("baseline.toml").read_bytes())


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def render_template(template: str, **values: object) -> str:
    """Fill ``{key}`` placeholders in one pass: braces inside a filled-in value (code in a chat) stay as they are."""
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template)


def turn_texts(session: HaystackSession | SessionView, fmt: str) -> list[str]:
    """Each turn as it appears in the prompt (without ``has_answer``)."""
    if fmt == "json":
        return [json.dumps({"role": t.role, "content": t.content}) for t in session.turns]
    template = baseline_prompts()["nl_turn"]
    return [render_template(template, role=t.role, content=t.content.strip()) for t in session.turns]


def render_session(number: int, session: HaystackSession | SessionView, fmt: str) -> str:
    """One session block: a numbered header with its date, then its turns (JSON list, or ``role: text`` blocks)."""
    turns = turn_texts(session, fmt)
    content = "[" + ", ".join(turns) + "]" if fmt == "json" else "".join(turns)
    return render_template(baseline_prompts()["session"], number=number, date=session.date_text, content=content)


def _fit(text: str, budget: int, counter: TokenCounter, keep: str) -> str:
    """The longest prefix (``keep="start"``) or suffix of ``text`` within ``budget`` tokens (binary search)."""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        part = text[:mid] if keep == "start" else text[len(text) - mid:]
        if counter.count_text(part) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] if keep == "start" else text[len(text) - lo:]


def truncate_blocks(blocks: Sequence[str], budget: int, counter: TokenCounter, keep: str = "start") -> str:
    """``blocks`` joined and cut to ``budget`` tokens, keeping the ``start`` or the ``end``.

    Whole blocks are taken while they fit, then the block that straddles the budget is cut inside; a final
    check on the joined text trims further if needed. Never exceeds the budget; may stay under it by about a
    token per block boundary (counted apart, a block's closing newline and the next one's opening newline are
    two tokens, joined they can be one), which on a 126k-token budget is noise.
    """
    joined = "".join(blocks)
    if counter.count_text(joined) <= budget:
        return joined
    ordered = list(blocks) if keep == "start" else list(reversed(blocks))
    kept: list[str] = []
    used = 0
    for block in ordered:
        tokens = counter.count_text(block)
        if used + tokens > budget:
            kept.append(_fit(block, budget - used, counter, keep))
            break
        kept.append(block)
        used += tokens
    text = "".join(kept) if keep == "start" else "".join(reversed(kept))
    return text if counter.count_text(text) <= budget else _fit(text, budget, counter, keep)
