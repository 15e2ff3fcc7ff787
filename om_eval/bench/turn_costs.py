"""What an agent would send its model at every user turn while a memory is built, and what that costs with and
without a provider's prompt cache.

The replay answers each question once, at the end; an agent on the same memory calls its model at every user
turn. :class:`TurnRecorder` records, at each user turn of the replay and without any model call, what the actor
would be sent then: its instructions, the memory's messages as the engine renders them at that moment, the
thread's unobserved tail and the user's message. It keeps, per turn, the prompt's tokens, the tokens it shares as a
prefix with the previous turn's prompt (what a provider could serve from its cache), its stable head (the system
messages, where a cache breakpoint goes), the assistant reply's tokens (the haystack's own reply: what the agent
would have generated) and the Observer's and Reflector's tokens spent after that turn. :func:`turn_costs` prices a
table under a :class:`~om_eval.llm.cache_profiles.CacheProfile`, at report time, so profiles can be compared
without replaying.

Counting is incremental: the engine's own counts are read (each message was counted once, when it was added;
the observations when they changed), the memory is rendered once per build (for its fixed text), and a prefix
is compared block by block, the first one that differs in part.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import date, datetime
from typing import Any

from om_eval.common.text import common_prefix_length
from om_eval.llm.cache_profiles import CacheProfile, TurnPrompt, cache_use, profile_rates
from om_eval.memory.parts import PromptPart
from om_eval.om.dates import DateMark, date_marks, mark_notes
from om_eval.om.memory import ObservationalMemory
from om_eval.om.records import Message
from om_eval.om.tokens import TokenCounter


@dataclass
class TurnTable:
    """One memory's turns, column by column (compact to store: one JSON object of integer lists)."""

    at: list[float] = field(default_factory=list)
    """Unix seconds of each user turn."""
    prompt: list[int] = field(default_factory=list)
    shared: list[int] = field(default_factory=list)
    head: list[int] = field(default_factory=list)
    reply: list[int] = field(default_factory=list)
    observer_prompt: list[int] = field(default_factory=list)
    observer_completion: list[int] = field(default_factory=list)
    reflector_prompt: list[int] = field(default_factory=list)
    reflector_completion: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.prompt)

    def to_json(self) -> str:
        return json.dumps({f.name: getattr(self, f.name) for f in fields(self)}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | Mapping[str, Any]) -> TurnTable:
        data = json.loads(text) if isinstance(text, str) else text
        return cls(**{f.name: list(data.get(f.name, [])) for f in fields(cls)})

    def append(self, at: float, prompt: int, shared: int, head: int, reply: int) -> None:
        for name, value in (("at", at), ("prompt", prompt), ("shared", shared), ("head", head), ("reply", reply),
                            ("observer_prompt", 0), ("observer_completion", 0), ("reflector_prompt", 0),
                            ("reflector_completion", 0)):
            getattr(self, name).append(value)


@dataclass(frozen=True)
class _Block:
    """One message of a turn's prompt: ``key`` tells equal messages apart cheaply (a message id, or the text)."""

    key: tuple[str, Any]
    tokens: int
    text: str | None = None
    """Kept for memory messages, whose shared part is counted when they differ."""
    system: bool = False
    dated_from: int | None = None
    """Observations: where in ``text`` the first date note goes (the first difference on another day)."""


class TurnRecorder:
    """Builds a :class:`TurnTable` while an OM replay runs (see the module docstring).

    A turn's prompt is, in the order the actor's context has it: the instructions; the memory's fixed text (its
    preamble and instructions, counted once, when the memory first has observations); the other threads'
    unobserved messages; the observations; the thread's unobserved tail; the user's message. Memory tokens are
    the engine's own counts (the observations' and each queued message's, kept as they change), so a turn costs
    no rendering and no counting; to the observations' count are added the relative dates and gap markers the
    actor reads with them on the turn's day (only those short notes are counted, once each).
    """

    def __init__(self, counter: TokenCounter, instructions: str, layout: str = "chunked") -> None:
        self.counter = counter
        self.layout = layout
        self.table = TurnTable()
        self._instructions = _Block(("instructions", None), counter.count_text(instructions), system=True)
        self._fixed: _Block | None = None
        self._previous: list[_Block] = []
        self._events_seen = 0
        self._dates = _DateNotes(counter)

    def unit_added(self, memory: ObservationalMemory, thread_id: str, unit: Sequence[Message]) -> None:
        """Record a turn for each user message of ``unit``, just added to ``thread_id`` and not yet observed: the
        turn's prompt ends with that message (what follows it in the unit is its reply)."""
        users = [index for index, message in enumerate(unit) if message.role == "user"]
        if not users:
            return
        tail = memory.turn_history(thread_id)
        ids = [m.id for m in tail]
        for index in users:
            message = unit[index]
            reply = unit[index + 1] if index + 1 < len(unit) and unit[index + 1].role == "assistant" else None
            try:
                end = ids.index(message.id) + 1
            except ValueError:  # not kept by the engine (an empty turn): nothing is sent for it
                continue
            self._turn(memory, thread_id, message, tail[:end], reply)

    def _turn(self, memory: ObservationalMemory, thread_id: str, message: Message, tail: Sequence[Message],
              reply: Message | None) -> None:
        blocks = [self._instructions, *self._memory(memory, thread_id, message.created_at)]
        blocks += [_Block(("message", m.id), memory.message_tokens(m.id)) for m in tail]
        shared = self._shared(blocks)
        head = 0
        for block in blocks:
            if not block.system:
                break
            head += block.tokens
        self.table.append(message.created_at.timestamp(), sum(b.tokens for b in blocks), shared, head,
                          memory.message_tokens(reply.id) if reply is not None else 0)
        self._previous = blocks

    def after_unit(self, memory: ObservationalMemory) -> None:
        """Charge the Observer and Reflector calls made since the last turn to it."""
        events = memory.events[self._events_seen:]
        self._events_seen = len(memory.events)
        if not len(self.table):
            return
        for event in events:
            role = "observer" if event.kind.startswith("observation") else "reflector"
            getattr(self.table, f"{role}_prompt")[-1] += event.prompt_tokens
            getattr(self.table, f"{role}_completion")[-1] += event.completion_tokens

    # -- internals --------------------------------------------------------------------------------------------

    def _memory(self, memory: ObservationalMemory, thread_id: str, now: datetime) -> list[_Block]:
        record = memory.record(thread_id)
        observations = record.active_observations
        if not observations:
            return []  # 1.x shows no memory at all before the first observation
        others = memory.queued_tokens() - memory.queued_tokens(thread_id) if memory.resource_scope else 0
        dates = self._dates.tokens(observations, now)
        if self._fixed is None:
            self._fixed = _Block(("fixed", None), self._fixed_tokens(memory, thread_id, now, others + dates),
                                 system=True)
        return [self._fixed, _Block(("others", (thread_id, others)), others, system=True),
                _Block(("observations", (observations, now.date())), record.observation_token_count + dates,
                       observations, system=True, dated_from=self._dates.first)]

    def _fixed_tokens(self, memory: ObservationalMemory, thread_id: str, now: datetime, shown: int) -> int:
        """The memory's fixed text: one rendering, less its observations (with their dates) and other threads'
        messages (``shown`` tokens besides the observations)."""
        rendered = memory.wording.actor_memory_messages(memory.context_inputs(now, thread_id), self.layout)
        total = sum(self.counter.count_text(m["content"]) for m in rendered)
        return max(0, total - memory.record(thread_id).observation_token_count - shown)

    def _shared(self, blocks: Sequence[_Block]) -> int:
        shared = 0
        for mine, theirs in zip(blocks, self._previous, strict=False):
            if mine.key == theirs.key:
                shared += mine.tokens
                continue
            if mine.text is not None and theirs.text is not None and mine.text:
                # Observations grow at the end: their common start, in proportion to the text (no counting). On
                # another day their relative dates differ from the first one on.
                head = common_prefix_length(mine.text, theirs.text)
                if mine.key[1][1] != theirs.key[1][1] and mine.dated_from is not None:
                    head = min(head, mine.dated_from)
                shared += mine.tokens * head // len(mine.text)
            break
        return shared


class _DateNotes:
    """The tokens of the relative dates and gap markers OM's actor reads with the observations on a day, kept as
    the observations grow: an appended text is read from its last old line on, and the notes are worked out
    again only when the day changes (each distinct note counted once)."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._text = ""
        self._marks: list[DateMark] = []
        self._day: date | None = None
        self._tokens = 0
        self._counts: dict[str, int] = {}

    @property
    def first(self) -> int | None:
        """Where the text's first relative date goes (the first place another day changes)."""
        return self._marks[0].note_at if self._marks else None

    def tokens(self, text: str, now: datetime) -> int:
        if text != self._text:
            if self._text and text.startswith(self._text):
                # Read again from the last old line, or from the line of a parenthesis still open at the old end
                # (an inline date clause may span lines, and the new text may close it).
                cut = self._text.rfind("\n") + 1
                if (unclosed := self._text.find("(", self._text.rfind(")") + 1)) >= 0:
                    cut = min(cut, self._text.rfind("\n", 0, unclosed) + 1)
                kept = [mark for mark in self._marks if mark.start < cut]
                previous = next((mark.when for mark in reversed(kept) if mark.header), None)
                added = date_marks(text, cut, previous)
                if self._day == now.date():
                    self._tokens += self._count(added, now) - self._count(self._marks[len(kept):], now)
                self._marks = kept + added
            else:
                self._marks, self._day = date_marks(text), None
            self._text = text
        if self._day != now.date():
            self._day, self._tokens = now.date(), self._count(self._marks, now)
        return self._tokens

    def _count(self, marks: Sequence[DateMark], now: datetime) -> int:
        total = 0
        for note in mark_notes(marks, now):
            if (count := self._counts.get(note)) is None:
                count = self._counts[note] = self.counter.count_text(note)
            total += count
        return total


class PartRecorder:
    """Builds a :class:`TurnTable` from the prompts a memory system describes part by part, at each user turn.

    Each part is counted once per key, so a turn costs no counting beyond its new parts. Two consecutive prompts
    share the parts they start with; at the first part that differs, their texts' common start counts in
    proportion (an observation list that grew at its end shares its old part). Model calls the system makes while
    it builds its memory are charged to the turn it records next, those after the last turn to the last: a system
    that records a turn once its reply is stored charges a turn the calls its message and its reply caused, as
    OM's replay does.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.table = TurnTable()
        self._counts: dict[Hashable, int] = {}
        self._previous: list[PromptPart] = []
        self._pending = [0, 0, 0, 0]

    def tokens(self, part: PromptPart) -> int:
        count = self._counts.get(part.key)
        if count is None:
            count = self._counts[part.key] = self.counter.count_text(part.text)
        return count

    def record(self, parts: Sequence[PromptPart], at: datetime, reply: PromptPart | None = None) -> None:
        shared = 0
        for mine, theirs in zip(parts, self._previous, strict=False):
            if mine.key == theirs.key:
                shared += self.tokens(mine)
                continue
            if mine.text:
                shared += self.tokens(mine) * common_prefix_length(mine.text, theirs.text) // len(mine.text)
            break
        head = 0
        for part in parts:
            if not part.head:
                break
            head += self.tokens(part)
        self.table.append(at.timestamp(), sum(self.tokens(p) for p in parts), shared, head,
                          self.tokens(reply) if reply is not None else 0)
        self._previous = list(parts)
        self._flush(-1)

    def adopt(self, table: TurnTable) -> None:
        """A whole table the system built itself, in place of the turns recorded so far."""
        self.table = table
        self._pending = [0, 0, 0, 0]

    def charge(self, stage: str, prompt_tokens: int | None, completion_tokens: int | None) -> None:
        """A memory model call's tokens (``stage`` ``reflector``, or anything else for the Observer's columns)."""
        offset = 2 if stage == "reflector" else 0
        self._pending[offset] += prompt_tokens or 0
        self._pending[offset + 1] += completion_tokens or 0

    def finish(self) -> TurnTable:
        """The table, with calls made after the last turn charged to it."""
        if len(self.table):
            self._flush(-1)
        return self.table

    def _flush(self, index: int) -> None:
        columns = (self.table.observer_prompt, self.table.observer_completion, self.table.reflector_prompt,
                   self.table.reflector_completion)
        for column, value in zip(columns, self._pending, strict=True):
            column[index] += value
        self._pending = [0, 0, 0, 0]


@dataclass(frozen=True)
class TurnCosts:
    """A table's totals under one profile."""

    profile: str
    turns: int
    prompt_tokens: int
    cached_tokens: int
    written_tokens: int
    actor_usd: float
    """The actor's calls with the cache's reads and writes as the profile's provider bills them."""
    actor_uncached_usd: float
    """The same calls with no cache."""
    memory_usd: float
    """The Observer's and Reflector's calls (priced without a cache)."""
    cumulative_usd: tuple[float, ...] = ()
    """Actor and memory dollars after each turn, with the cache."""
    cumulative_uncached_usd: tuple[float, ...] = ()
    reads: tuple[int, ...] = ()
    """The tokens each turn read from the cache (with ``cumulative``)."""
    short_turns: int = 0
    """Turns whose prompt is under the profile's caching minimum: no provider caches any of it."""

    @property
    def cached_share(self) -> float | None:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else None

    @property
    def total_usd(self) -> float:
        return self.actor_usd + self.memory_usd

    @property
    def total_uncached_usd(self) -> float:
        return self.actor_uncached_usd + self.memory_usd

    @property
    def saving_ratio(self) -> float | None:
        """Dollars without caching per dollar with it (the "x times cheaper")."""
        return self.total_uncached_usd / self.total_usd if self.total_usd else None


def turn_costs(table: TurnTable, profile: CacheProfile, *, cumulative: bool = False) -> TurnCosts:
    """Price ``table`` under ``profile``: each turn reads and writes what :func:`cache_use` says."""
    rates = profile_rates(profile)
    previous: TurnPrompt | None = None
    cached = written = 0
    actor = uncached = memory = 0.0
    running: list[float] = []
    running_uncached: list[float] = []
    reads: list[int] = []
    for index in range(len(table)):
        gap = table.at[index] - table.at[index - 1] if index else None
        turn = TurnPrompt(table.prompt[index], table.shared[index], table.head[index], gap)
        read, wrote = cache_use(profile, turn, previous)
        cached += read
        written += wrote
        actor += rates.cost(turn.tokens, table.reply[index], read, wrote)
        uncached += rates.cost(turn.tokens, table.reply[index])
        memory += rates.cost(table.observer_prompt[index] + table.reflector_prompt[index],
                             table.observer_completion[index] + table.reflector_completion[index])
        if cumulative:
            running.append(actor + memory)
            running_uncached.append(uncached + memory)
            reads.append(read)
        previous = turn
    short = sum(1 for tokens in table.prompt if tokens < profile.min_tokens)
    return TurnCosts(profile.name, len(table), sum(table.prompt), cached, written, actor, uncached, memory,
                     tuple(running), tuple(running_uncached), tuple(reads), short)


def retrieval_turns(messages: Sequence[Message], counter: TokenCounter, instructions: str,
                    context_tokens: int) -> TurnTable:
    """The turns of an agent that retrieves from its history at every turn: the instructions, ``context_tokens``
    of retrieved history (the size its answer was shown) and the user's message.

    Each turn's query is its own message, so its hits differ from the previous turn's: only the instructions are
    a shared prefix. The retrieved text counts as part of the stable head, where a cache breakpoint goes (an
    Anthropic-style cache writes it again at every turn).
    """
    head = counter.count_text(instructions)
    table = TurnTable()
    first = True
    for index, message in enumerate(messages):
        if message.role != "user":
            continue
        reply = messages[index + 1] if index + 1 < len(messages) and messages[index + 1].role == "assistant" else None
        own = counter.count_text(message.text())
        table.append(message.created_at.timestamp(), head + context_tokens + own, 0 if first else head,
                     head + context_tokens, counter.count_text(reply.text()) if reply is not None else 0)
        first = False
    return table


#: Tables of recent shared haystacks (a LoCoMo conversation's ~200 questions share one), by caller's key.
_SHARED: dict[tuple[Any, ...], str] = {}


def shared_table(key: tuple[Any, ...] | None, make: Callable[[], TurnTable]) -> str:
    """``make()`` as JSON, made once per ``key`` among recent keys (``None``: a haystack of its own, made each
    time). Questions come grouped by haystack, so a few keys are enough."""
    if key is not None and (kept := _SHARED.get(key)) is not None:
        return kept
    table = make().to_json()
    if key is not None:
        while len(_SHARED) >= 8:
            _SHARED.pop(next(iter(_SHARED)))
        _SHARED[key] = table
    return table
