"""The om-eval side of the engine differential (``tests/om/test_mastra_engine_differential.py``).

Three pieces, each mirrored by ``scripts/mastra_engine_replay.mjs`` on the Node side:

* **Conversations**: seeded multi-session histories whose every message starts with a tag
  ``«m12|May 1, 2023|09:00»`` followed by plain words, so a stand-in model can tell which messages a call was
  given and when they were said, whatever wording the prompt around them has.
* **Stand-in models**: an Observer that writes one dated observation line per tagged message (grouped by the
  ``<thread id>`` block the tag sits in), and a Reflector that keeps every fourth fact it is shown. Both
  implementations follow the same rule, so identical inputs give identical replies and identical token counts.
* **The replay**: each user/assistant pair is added and checked as one agent turn by the benchmark replay's own
  :func:`~om_eval.systems.om.replay.check_unit`, and the record is read after every pair; finally the actor's messages
  before a question.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from om_eval.om.config import (
    ModelSettings,
    ObservationConfig,
    OMConfig,
    ReflectionConfig,
)
from om_eval.om.exact import PromptPack
from om_eval.om.memory import ObservationalMemory
from om_eval.om.model import ChatMessage, ModelReply
from om_eval.om.records import Message
from om_eval.om.tokens import make_counter
from om_eval.systems.om.accounting import PendingCounter
from om_eval.systems.om.replay import check_question_turn, check_unit

TAG = re.compile(r"«(m\d+)\|([^|»]+)\|(\d\d:\d\d)»((?: [a-z]+){0,6})")
THREAD_OPEN = re.compile(r'<thread id="([^"]+)">')
FACT = re.compile(r"fact (m\d+)")
DATE_LINE = re.compile(r"^Date: .+$", re.MULTILINE)
WORDS = ["apple", "river", "stone", "cloud", "maple", "violin", "harbor", "pepper", "lantern", "meadow", "copper",
         "falcon", "orchid", "canyon", "velvet", "ember", "quartz", "willow", "saffron", "tundra", "beacon", "walnut",
         "cobalt", "juniper"]

# --------------------------------------------------------------------------- conversations


def _iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def conversation(seed: int, *, sessions: tuple[int, int] = (3, 7), pairs: tuple[int, int] = (1, 6),
                 words: tuple[int, int] = (8, 70)) -> dict[str, Any]:
    """A seeded conversation in the JSON shape both replays read (times are UTC wall-clock)."""
    rng = random.Random(seed)
    day = datetime(2023, 5, 1, 8, 0) + timedelta(days=rng.randint(0, 300))
    out, number = [], 0
    for s in range(rng.randint(*sessions)):
        day = day + timedelta(days=rng.randint(0, 4), hours=rng.randint(0, 10), minutes=rng.randint(0, 59))
        messages = []
        for i in range(2 * rng.randint(*pairs)):
            at = day + timedelta(seconds=5 * i)
            number += 1
            tag = f"«m{number}|{at.strftime('%b')} {at.day}, {at.year}|{at.strftime('%H:%M')}»"
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(*words)))
            messages.append({"id": f"m{number}", "role": ("user", "assistant")[i % 2], "text": f"{tag} {text}",
                             "createdAt": _iso(at)})
        out.append({"thread": f"c{seed}-s{s}", "createdAt": _iso(day), "messages": messages})
    last = datetime.strptime(out[-1]["messages"][-1]["createdAt"], "%Y-%m-%dT%H:%M:%S.000Z")
    asked = last + timedelta(days=rng.randint(1, 20), hours=3)
    return {"resource": f"r{seed}", "sessions": out,
            "question": {"thread": f"c{seed}-q", "text": "What did I tell you about the harbor?",
                         "createdAt": _iso(asked), "now": _iso(asked)}}


def _parse(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.000Z")


# --------------------------------------------------------------------------- stand-in models


def _content_text(content: Any) -> str:
    """A message's text: its string, or its text parts joined by newlines (as the script's ``promptText``)."""
    if isinstance(content, str):
        return content
    return "\n".join(str(part.get("text") or "") for part in content)


def _prompt_text(messages: Sequence[ChatMessage]) -> str:
    return "\n".join(_content_text(m["content"]) for m in messages if m["role"] != "system")


Fact = tuple[str, str, str, str]  # tag, day, time, words


def _half_number(facts: list[Fact]) -> int:
    return int(facts[-1][0][1:]) // 2 if facts else 0


def _hint_lines(facts: list[Fact]) -> list[str]:
    """The JS rule's continuity hints for one section (see ``hintLines`` in the script)."""
    n = _half_number(facts)
    first, last = (facts[0][0], facts[-1][0]) if facts else ("none", "none")
    out = []
    if n % 3:
        out.append(f"<current-task>\nPrimary: follow up on {last}\n</current-task>")
    if n % 2 == 0:
        out.append(f"<suggested-response>\nAsk about {first}\n</suggested-response>")
    if n % 4 == 1:
        out.append(f"<current-task>\nSecondary: revisit {first}\n</current-task>")
    return out


def observer_reply(text: str) -> str:
    """One observation line per tagged message, in the ``<thread>`` block the tag sits in, and hints (the JS rule)."""
    starts = [(m.start(), m.group(1)) for m in THREAD_OPEN.finditer(text)]
    seen: set[str] = set()
    by_thread: dict[str, list[Fact]] = {}
    for m in TAG.finditer(text):
        if m.group(1) in seen:
            continue
        seen.add(m.group(1))
        thread = ""
        for at, shown in starts:
            if at < m.start():
                thread = shown
        by_thread.setdefault(thread, []).append((m.group(1), m.group(2), m.group(3), m.group(4).strip()))

    def section(facts: list[Fact]) -> str:
        lines, date = [], None
        for index, (tag, day, time, words) in enumerate(facts):
            if day != date:
                lines.append(f"Date: {day}")
                date = day
            line = f"* 🔴 ({time}) fact {tag}: the speaker said {words}"
            if index == 0 and _half_number(facts) % 5 == 2:
                line += f" <suggested-response>inline {facts[-1][0]}</suggested-response>"
            lines.append(line)
        return "\n".join(lines)

    if not starts:
        facts = by_thread.get("", [])
        return "\n".join([f"<observations>\n{section(facts)}\n</observations>", *_hint_lines(facts)])
    parts = ["\n".join([f'<thread id="{shown}">', section(facts), *_hint_lines(facts), "</thread>"])
             for shown, facts in by_thread.items()]
    return "<observations>\n" + "\n".join(parts) + "\n</observations>"


def reflector_reply(text: str) -> str:
    """Every fourth fact seen, under the first date line, and hints (the JS rule)."""
    tags = list(dict.fromkeys(FACT.findall(text)))
    date = DATE_LINE.search(text)
    kept = [f"* 🔴 (00:00) kept fact {t} from the earlier notes" for i, t in enumerate(tags) if i % 4 == 0]
    hints = []
    if len(tags) % 2 == 0:
        hints.append(f"<suggested-response>\nReflect on {tags[0] if tags else 'none'}\n</suggested-response>")
    if len(tags) % 3 == 1:
        hints.append(f"<current-task>\nReview {tags[-1]}\n</current-task>")
    body = "<observations>\n" + (date.group(0) if date else "Date: Jan 1, 2000") + "\n" + "\n".join(kept) + (
        "\n</observations>")
    return "\n".join([body, *hints])


@dataclass
class StandIn:
    """A :class:`~om_eval.om.model.ChatModel` answering by ``observer_reply`` or ``reflector_reply``; every call
    is appended to ``calls`` (shared by both models, so it is in call order)."""

    kind: str
    calls: list[dict[str, Any]]
    record_prompts: bool = False
    """Keep each call's messages too (``prompt``), as the script does with ``recordPrompts``."""

    async def complete(self, messages: Sequence[ChatMessage], *, stage: str, settings: ModelSettings) -> ModelReply:
        text = _prompt_text(messages)
        call = {"kind": self.kind, "tags": list(dict.fromkeys(m.group(1) for m in TAG.finditer(text)))}
        if self.record_prompts:
            call["prompt"] = [dict(m) for m in messages]
        self.calls.append(call)
        reply = observer_reply(text) if self.kind == "observer" else reflector_reply(text)
        return ModelReply(reply, settings.model, prompt_tokens=10, completion_tokens=20, finish_reason="stop")


# --------------------------------------------------------------------------- the replay


@dataclass(frozen=True)
class Setting:
    """One cell of the differential: scope, buffering and the (small) thresholds."""

    scope: str
    buffering: bool
    message_tokens: int
    observation_tokens: int
    max_tokens_per_batch: int = 10_000
    obscure_thread_ids: bool = False
    pending_accounting: str = "exact"
    """How om-eval decides that observation is due after a pair (:mod:`om_eval.systems.om.accounting`)."""
    buffer_candidates: str = "unbuffered"
    """Which messages om-eval's buffer passes take (``after_cursor`` is 1.10's rule)."""
    activation_counts_reminder: bool = False
    """Count 1.10's continuation reminder in activation's pending tokens at later steps (1.10's rule)."""
    buffer_ignores_new_reflection: bool = False
    """A buffering pass at a turn's first step does not see a reflection buffered in that step (1.10's rule)."""
    mastra_release: str = "v1_10"
    """The release compared with; ``v1_31`` also sets what ``om=v1_31`` sets (sync reflection from the model's
    level, every previous observation shown to the Observer, Mastra's thread-section merge)."""
    sessions: tuple[int, int] = (3, 7)
    pairs: tuple[int, int] = (1, 6)
    """Ranges of sessions per conversation and pairs per session."""
    exact: bool = False
    """``prompt_variant="mastra_exact"``: om-eval reads the release's own prompts, and both sides record every
    request whole (``tests/om/test_mastra_exact_differential.py``)."""

    def conversation(self, seed: int) -> dict[str, Any]:
        return conversation(seed, sessions=self.sessions, pairs=self.pairs)

    def node_config(self) -> dict[str, Any]:
        return {"scope": self.scope, "buffering": self.buffering, "messageTokens": self.message_tokens,
                "observationTokens": self.observation_tokens, "maxTokensPerBatch": self.max_tokens_per_batch,
                "obscureThreadIds": self.obscure_thread_ids, "recordPrompts": self.exact}

    def om_config(self) -> OMConfig:
        newer = self.mastra_release == "v1_31"
        observation = ObservationConfig(
            message_tokens=self.message_tokens, max_tokens_per_batch=self.max_tokens_per_batch,
            buffer_tokens=None if self.buffering else False, buffer_candidates=self.buffer_candidates,
            activation_counts_reminder=self.activation_counts_reminder,
            buffer_ignores_new_reflection=self.buffer_ignores_new_reflection,
            previous_observer_tokens=False if newer else 2000,
        )
        reflection = ReflectionConfig(observation_tokens=self.observation_tokens, start_level="auto" if newer else 0)
        if self.exact:  # the stand-ins' model ids, which decide the start levels: each level has its own words
            observation = replace(observation, model=ModelSettings(model="test/om-eval-observer"))
            reflection = replace(reflection, model=ModelSettings(model="test/om-eval-reflector", temperature=0.0))
        return OMConfig(
            scope=self.scope, observation=observation,
            reflection=reflection,
            obscure_thread_ids=self.obscure_thread_ids, resource_buffering=self.buffering and self.scope == "resource",
            mastra_release=self.mastra_release,  # type: ignore[arg-type]  # a release name; OMConfig checks it
            thread_sections="mastra" if newer else "om_eval",
            prompt_variant="mastra_exact" if self.exact else "current",
        )


def _record_state(memory: ObservationalMemory, thread_id: str) -> dict[str, Any]:
    record = memory.record(thread_id)
    return {
        "generation": len(memory.generations(thread_id)) - 1,
        "observations": record.active_observations,
        "observationTokens": record.observation_token_count,
        "chunks": [{"messageIds": list(c.message_ids), "messageTokens": c.message_tokens, "tokens": c.token_count}
                   for c in record.buffered_observation_chunks],
        "bufferedReflection": record.buffered_reflection or None,
    }


async def replay(conversation: dict[str, Any], setting: Setting, prompts: PromptPack | None = None) -> dict[str, Any]:
    """Replay ``conversation`` through om-eval's engine: the structure the Node script prints. ``prompts``: the
    release's pack, for a setting with ``exact``."""
    calls: list[dict[str, Any]] = []
    memory = ObservationalMemory(setting.om_config(), observer=StandIn("observer", calls, setting.exact),
                                 reflector=StandIn("reflector", calls, setting.exact),
                                 resource_id=conversation["resource"], token_counter=make_counter("tokenx"),
                                 prompts=prompts)
    accounting = PendingCounter(setting.pending_accounting)  # type: ignore[arg-type]  # a reading name; PendingCounter checks it
    pairs = []
    for session in conversation["sessions"]:
        thread = session["thread"]
        messages = session["messages"]
        for start in range(0, len(messages), 2):
            unit = messages[start:start + 2]
            before = len(calls)
            memory.add_messages(Message(m["id"], thread, m["role"], m["text"], _parse(m["createdAt"])) for m in unit)
            await check_unit(memory, thread, buffering=setting.buffering, accounting=accounting)
            pairs.append({"thread": thread, "messageIds": [m["id"] for m in unit], "calls": calls[before:],
                          "record": _record_state(memory, thread)})
    question = conversation["question"]
    asked_in = question["thread"] if setting.scope == "resource" else conversation["sessions"][-1]["thread"]
    await check_question_turn(memory, asked_in, buffering=setting.buffering, accounting=accounting)
    context = memory.build_context(_parse(question["now"]), asked_in)
    return {"pairs": pairs, "actor": {"messages": context.messages}}
