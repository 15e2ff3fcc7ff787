"""What the actor sees: a part of :class:`~om_eval.om.memory.ObservationalMemory`.

A mixin like :mod:`om_eval.om.buffering`: the memory messages (:mod:`om_eval.om.context` renders them) and the raw
tail of the turn, as 1.10 or 1.31 builds them, including the other conversations of the resource and how they are
listed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from om_eval.om.context import (
    ContextInputs,
    format_other_conversations,
)
from om_eval.om.engine_state import EngineState
from om_eval.om.groups import parse_groups
from om_eval.om.recall.search import Bm25GroupSearch, IndexedGroup
from om_eval.om.recall.tool import RecallHistory, ThreadInfo
from om_eval.om.records import Message


@dataclass(frozen=True)
class ActorContext:
    """The messages an actor receives: memory messages, then the thread's unobserved tail."""

    memory_messages: list[dict[str, str]]
    tail_messages: list[dict[str, str]]

    @property
    def messages(self) -> list[dict[str, str]]:
        return [*self.memory_messages, *self.tail_messages]


class ActorView(EngineState):
    """The actor's context, its raw tail and the other conversations it is shown."""

    # -- what the actor sees --------------------------------------------------------------------------------

    def build_context(self, now: datetime, thread_id: str | None = None) -> ActorContext:
        """The actor's view at ``now``: memory messages plus ``thread_id``'s unobserved tail.

        In resource scope the other threads' unobserved messages appear raw in the other-conversations block, as
        1.x lists them (:meth:`listed_threads`); pass a fresh ``thread_id`` (or None) to see all threads that way.
        With no observations yet there are no memory messages at all (1.x injects nothing then).
        """
        memory_messages = self.wording.actor_memory_messages(self.context_inputs(now, thread_id),
                                                             self.config.context_layout)
        return ActorContext(memory_messages, self.history_messages(thread_id))

    def history_messages(self, thread_id: str | None = None) -> list[dict[str, str]]:
        """:meth:`turn_history` as chat messages, the raw tail an actor on ``thread_id`` is shown."""
        return [{"role": m.role, "content": m.text()} for m in self.turn_history(thread_id)]

    def context_inputs(self, now: datetime, thread_id: str | None = None) -> ContextInputs:
        """What :meth:`build_context` renders: observations, other threads' raw messages, continuity hints."""
        state = self._threads.get(thread_id) if thread_id is not None else None
        return ContextInputs(
            observations=self.record(thread_id).active_observations,
            now=now,
            other_conversations=self.other_conversations(thread_id),
            current_task=state.current_task if state else None,
            suggested_response=state.suggested_response if state else None,
            rules=self.rules,
            retrieval=self.config.retrieval,
            retrieval_instructions=self.config.retrieval_instructions,
            retrieval_search=self.config.retrieval_search != "off",
        )

    def recall_history(self, current_thread_id: str, now: datetime) -> RecallHistory:
        """What the ``recall`` tool reads (retrieval mode): every stored message, with the thread and message ids
        models see, and one thread per conversation (created at its first message, updated at its last, titled
        as the Observer titled it). The thread the question is asked on exists from ``now`` with no messages yet,
        as an agent's thread does when its tools run."""
        by_thread: dict[str, list[Message]] = {}
        for message in self._messages.values():
            by_thread.setdefault(message.thread_id, []).append(message)
        threads = []
        for thread_id, messages in by_thread.items():
            times = [m.created_at for m in messages]
            state = self._threads.get(thread_id)
            threads.append(ThreadInfo(self.shown_thread_id(thread_id), self.resource_id, min(times), max(times),
                                      state.thread_title if state else None))
        if current_thread_id not in by_thread:
            threads.append(ThreadInfo(self.shown_thread_id(current_thread_id), self.resource_id, now, now))
        shown: dict[str, str] = {}
        for message_id in self._messages:
            alias = self.shown_message_id(message_id)
            if shown.setdefault(alias, message_id) != message_id:
                raise ValueError(f"messages {shown[alias]!r} and {message_id!r} are both shown as {alias!r}")
        messages = [replace(m, id=self.shown_message_id(m.id), thread_id=self.shown_thread_id(m.thread_id))
                    for m in self._messages.values()]
        return RecallHistory(threads, messages)

    def recall_search_index(self) -> Bm25GroupSearch:
        """BM25 over :meth:`recall_search_groups` (``om.retrieval_search=bm25``)."""
        return Bm25GroupSearch(self.recall_search_groups())

    def recall_search_groups(self) -> list[IndexedGroup]:
        """The observation groups of every record's current generation, for the recall tool's ``mode="search"``:
        each group's conversation is that of the first message of its range, its time that of the last."""
        shown = {self.shown_message_id(m.id): m for m in self._messages.values()}
        groups = []
        for generations in self._generations.values():
            for group in parse_groups(generations[-1].active_observations):
                start, _, end = group.range.partition(":")
                first, last = shown.get(start), shown.get(end) or shown.get(start)
                if first is None:
                    continue
                groups.append(IndexedGroup(self.shown_thread_id(first.thread_id), group.id, group.range,
                                           group.content, last.created_at if last else None))
        return groups

    def turn_history(self, thread_id: str | None = None) -> list[Message]:
        """The unobserved messages an agent turn on ``thread_id`` holds as its chat history.

        Thread scope and 1.10: the thread's own. 1.31 in resource scope: every thread's messages not observed and
        newer than the record's cursor, in time order (its ``Memory.getContext`` loads the resource's history), so
        other threads' messages are both history and other conversations, and count twice toward the threshold.
        """
        if not (self.resource_scope and self.rules.resource_turn_history):
            return self.unobserved_messages(thread_id) if thread_id is not None else []
        cursor = self.record().last_observed_at
        pending = [m for m in self._messages.values()
                   if m.id not in self._observed_ids and (cursor is None or m.created_at > cursor)]
        return sorted(pending, key=lambda m: m.created_at)

    def other_conversations(self, thread_id: str | None = None) -> dict[str, list[Message]]:
        """Resource scope: the unobserved messages of the threads listed besides ``thread_id``, by shown id, in
        the order the actor's context shows them (empty in thread scope).

        1.31 starts a thread never observed at the record's cursor (#15265), so its messages older than the
        latest observation are hidden here (they are still observed when the thread is chosen)."""
        other: dict[str, list[Message]] = {}
        if not self.resource_scope:
            return other
        record_cursor = self.record().last_observed_at if self.rules.resource_turn_history else None
        for other_id in self.listed_threads(thread_id):
            queue = self._queues.get(other_id)
            if other_id == thread_id or queue is None or not queue.messages:
                continue
            state = self._threads.get(other_id)
            cursor = state.last_observed_at if state and state.last_observed_at else record_cursor
            messages = [m for m in queue.messages if cursor is None or m.created_at > cursor]
            if messages:
                other[self.shown_thread_id(other_id)] = messages
        return other

    def other_conversations_text(self, thread_id: str | None = None) -> str:
        """The other-conversations block as the actor's context writes it ('' when there is none)."""
        return format_other_conversations(self.other_conversations(thread_id),
                                          line_history=self.rules.history_lines)

    def listed_threads(self, thread_id: str | None = None, *, every: bool = False) -> list[str]:
        """The threads whose unobserved messages the actor's context may show, in the order it shows them.

        1.x lists a resource's threads newest first (by creation: here, by first message) and reads one page of
        ``other_threads_limit`` (``every``: all threads, newest first); a thread asked on for the first time was just
        created, so it is the newest and takes one place. ``other_threads_order="oldest_first"`` shows the same
        threads oldest first.
        """
        created = list(self._threads)
        if thread_id is not None and thread_id not in self._threads:
            created.append(thread_id)
        newest = created[::-1]
        if every:
            return newest
        page = self.config.other_threads_limit
        chosen = newest[:page] if page is not None else newest
        return chosen[::-1] if self.config.other_threads_order == "oldest_first" else chosen
