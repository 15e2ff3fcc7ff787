"""``prompt=mastra_exact`` against the package: every request om-eval sends is the one ``@mastra/memory`` sends.

Acceptance test of issue 32. Every request is captured at the model, on both sides, and compared message by message,
text part by text part: the Observer's (system prompt, task and history messages, or 1.3's one message), the
Reflector's (system prompt and its request at each compression level it climbed to) and what the actor is given
(memory messages and continuation reminder).

* **1.10.0 and 1.31.0, engine against engine.** ``scripts/mastra_engine_replay.mjs`` drives the released engine
  through generated conversations with the deterministic stand-in models of the engine differential
  (``tests/om/test_mastra_engine_differential.py``), now recording each prompt its stand-ins are handed; om-eval's
  engine replays the same conversations under ``prompt_variant="mastra_exact"`` with that release's pack. Both
  engines choose the same calls with the same inputs (the engine differential shows it), so the requests must be
  equal whole: their wording is the release's own.
* **1.3.0, builders against the pack.** 1.3.0's engine is not om-eval's (om-eval follows the benchmark-era
  development code with 1.3's prompts: ``om=benchmark_era``), so no engine replay of 1.3.0 compares. om-eval's
  engine replays generated conversations under the 1.3.0 pack, with the benchmark era's settings; for each request
  captured at the model, the release's own builders are called under Node with what that call was built from (its
  raw messages, previous observations, thread ids, compression level, the actor's observations, hints and other
  conversations), and the two requests must be equal.

The prompts' text is Mastra's: a difference is reported by position and a few characters, never printed whole.
Marked ``integration`` and ``mastra``; skipped, saying why, without Node, npm or the registry.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import pytest

from om_eval.om.config import ModelSettings, ObservationConfig, OMConfig, ReflectionConfig
from om_eval.om.context import ContextInputs
from om_eval.om.exact import PromptPack
from om_eval.om.exact.node import UNDEFINED, BuilderProcess
from om_eval.om.exact.pins import RELEASES
from om_eval.om.memory import ObservationalMemory
from om_eval.om.model import ChatMessage, ModelReply
from om_eval.om.observer import ObserverRequest
from om_eval.om.records import Message
from om_eval.om.threads import obscure_thread_id
from om_eval.om.tokens import make_counter
from om_eval.om.wording import MastraWording
from om_eval.systems.om.accounting import PendingCounter
from om_eval.systems.om.replay import check_question_turn, check_unit
from tests.npm_oracle import NodeFolder, differential_size, node_folder
from tests.om.engine_replay import Setting, observer_reply, reflector_reply, replay
from tests.om.exact.packs import real_pack, real_package
from tests.om.test_mastra_engine_differential import (
    ENGINE_PACKAGES,
    ENGINE_PACKAGES_1_31,
    SCRIPT,
    SETTINGS,
    mastra_actor_messages,
)

pytestmark = [pytest.mark.integration, pytest.mark.mastra]

CONVERSATIONS = 100
#: An engine cell's conversations: 100 under ``OM_EVAL_DIFFERENTIAL=full`` (:func:`tests.npm_oracle.differential_size`).
ENGINE_CONVERSATIONS = differential_size(CONVERSATIONS)
SEED = 20261201

#: The engine cells compared whole, by release: the differential's cells with the release's own prompts.
ENGINE_CELLS = {
    "1.10.0 thread-sync": replace(SETTINGS["thread-sync"], exact=True),
    "1.10.0 resource-sync": replace(SETTINGS["resource-sync"], exact=True, obscure_thread_ids=False),
    # With 1.10's three buffering quirks: its buffer candidates, its reminder in activation's count, and a pass at a
    # turn's first step blind to a reflection buffered in that step (all of them change what the Observer is sent).
    "1.10.0 thread-buffered": replace(SETTINGS["thread-buffered"], exact=True, buffer_ignores_new_reflection=True),
    # The presets' obscured thread ids: compared once Mastra's raw ids are written obscured (see obscured_ids).
    "1.10.0 resource-sync obscured": replace(SETTINGS["resource-sync"], exact=True),
    "1.31.0 thread-sync": replace(SETTINGS["1.31 thread-sync"], exact=True),
    "1.31.0 resource-sync": replace(SETTINGS["1.31 resource-sync"], exact=True, obscure_thread_ids=False),
    "1.31.0 resource-sync obscured": replace(SETTINGS["1.31 resource-sync"], exact=True),
    "1.31.0 thread-buffered": replace(SETTINGS["1.31 thread-buffered"], exact=True),
}


def obscured_ids(conversation: Mapping[str, Any], messages: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    """Mastra's Observer request with each raw thread id written as the id om-eval shows (its 32-bit xxHash).

    1.x shows the Observer each thread's own id (in the multi-thread history and prior metadata) and obscures it
    only where the actor reads it and in the stored sections. om-eval shows the obscured id everywhere: its thread
    ids hold the question id, whose ``_abs`` suffix would tell the Observer the answer key (a deliberate departure,
    docs/fidelity.md). Everything else must be equal.
    """
    raw = [s["thread"] for s in conversation["sessions"]] + [conversation["question"]["thread"]]
    shown = {thread: obscure_thread_id(thread, "xxh32") for thread in raw}

    def rename(text: str) -> str:
        for thread, obscured in shown.items():
            text = text.replace(f'<thread id="{thread}">', f'<thread id="{obscured}">')
            text = text.replace(f"- thread {thread}\n", f"- thread {obscured}\n")
        return text

    return [(role, [rename(part) for part in texts]) for role, texts in messages]


# --------------------------------------------------------------------------- comparing requests


def parts(content: Any) -> list[str]:
    """A message's content as its text parts (a string is one part: the model receives it as one)."""
    if isinstance(content, str):
        return [content]
    return [str(part.get("text", "")) for part in content if part.get("type", "text") == "text"]


def requested(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[str]]]:
    """A request as (role, text parts) per message."""
    return [(str(m["role"]), parts(m["content"])) for m in messages]


def where(ours: Any, theirs: Any) -> str:
    """Where two requests first differ, with a little context (the texts are Mastra's: never printed whole)."""
    if len(ours) != len(theirs):
        return f"{len(ours)} messages or parts against {len(theirs)}"
    for index, (a, b) in enumerate(zip(ours, theirs)):
        if a == b:
            continue
        if isinstance(a, (list, tuple)):
            return f"[{index}] " + where(a, b)
        if isinstance(a, str) and isinstance(b, str):
            at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            return f"[{index}] at {at} of {len(b)}: ours {a[max(0, at - 30):at + 30]!r}, theirs " \
                   f"{b[max(0, at - 30):at + 30]!r}"
        return f"[{index}] ours {a!r:.80} theirs {b!r:.80}"
    return "equal"


@dataclass
class Tally:
    """Requests compared and found identical, by kind; the first differences, located."""

    counts: dict[str, list[int]]
    examples: list[str]

    @classmethod
    def new(cls) -> Tally:
        return cls({kind: [0, 0] for kind in ("observer", "reflector", "actor")}, [])

    def add(self, kind: str, ours: Any, theirs: Any, label: str) -> None:
        same = ours == theirs
        self.counts[kind][0] += same
        self.counts[kind][1] += 1
        if not same and len(self.examples) < 6:
            self.examples.append(f"{label} {kind}: {where(ours, theirs)}")

    def lines(self, name: str) -> str:
        shown = [f"exact differential, {name}:"]
        shown += [f"  {kind:10s} requests {same:5d} / {total:5d} identical" for kind, (same, total) in
                  self.counts.items()]
        return "\n".join(shown)

    @property
    def identical(self) -> bool:
        return all(same == total for same, total in self.counts.values())


# --------------------------------------------------------------------------- 1.10.0 and 1.31.0: engine against engine


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> NodeFolder:
    return node_folder(tmp_path_factory, "mastra-engine-oracle", ENGINE_PACKAGES)


@pytest.fixture(scope="module")
def oracle_1_31(tmp_path_factory: pytest.TempPathFactory) -> NodeFolder:
    return node_folder(tmp_path_factory, "mastra-engine-oracle-1.31", ENGINE_PACKAGES_1_31)


def engine_tally(cell: str, conversations: list[dict[str, Any]], theirs: list[dict[str, Any]],
                 ours: list[dict[str, Any]]) -> Tally:
    tally = Tally.new()
    renamed = cell.endswith("obscured")
    for conversation, mastra, om_eval in zip(conversations, theirs, ours):
        assert "error" not in mastra, mastra.get("error")
        assert len(mastra["pairs"]) == len(om_eval["pairs"])
        for index, (a, b) in enumerate(zip(mastra["pairs"], om_eval["pairs"])):
            label = f"{cell} {conversation['resource']} pair {index}"
            if sorted(c["kind"] for c in a["calls"]) != sorted(c["kind"] for c in b["calls"]):
                tally.add("observer", "calls", [c["kind"] for c in a["calls"]], label)  # counted as a difference
                continue
            # A pair's parallel batches reach the model in either order (1.31 resolves each batch's extractors
            # first): the engine differential checks which calls a pair makes, here each request is compared.
            for kind in ("observer", "reflector"):
                mastra_requests = [requested(c["prompt"]) for c in a["calls"] if c["kind"] == kind]
                if renamed and kind == "observer":
                    mastra_requests = [obscured_ids(conversation, r) for r in mastra_requests]
                ours_requests = [requested(c["prompt"]) for c in b["calls"] if c["kind"] == kind]
                for ours_request, mastra_request in zip(sorted(ours_requests), sorted(mastra_requests)):
                    tally.add(kind, ours_request, mastra_request, label)
        shown = [m for m in mastra_actor_messages(mastra)]
        tally.add("actor", requested(om_eval["actor"]["messages"]), requested(shown),
                  f"{cell} {conversation['resource']}")
    return tally


@pytest.mark.parametrize("cell", list(ENGINE_CELLS))
def test_every_request_is_the_packages(cell: str, request: pytest.FixtureRequest,
                                       tmp_path_factory: pytest.TempPathFactory,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    setting = ENGINE_CELLS[cell]
    version = cell.split()[0]
    pack = real_pack(tmp_path_factory, version)
    oracle = request.getfixturevalue("oracle_1_31" if version == "1.31.0" else "oracle")
    conversations = [setting.conversation(SEED + i) for i in range(ENGINE_CONVERSATIONS)]
    theirs = oracle.run(SCRIPT.read_text(encoding="utf-8"),
                        {"config": setting.node_config(), "conversations": conversations},
                        name="om_eval_engine_replay.mjs")
    ours = [asyncio.run(replay(c, setting, pack)) for c in conversations]
    tally = engine_tally(cell, conversations, theirs, ours)
    with capsys.disabled():
        print("\n" + tally.lines(f"{cell} (@mastra/memory {version})"))
    assert tally.identical, "\n".join(tally.examples)


# --------------------------------------------------------------------------- 1.3.0: the builders against the pack


class RecordingWording(MastraWording):
    """The pack's wording, keeping what each prompt was filled from (in the order the engine asked)."""

    def __init__(self, pack: PromptPack) -> None:
        super().__init__(pack)
        self.observer: list[tuple[bool, ObserverRequest]] = []
        self.reflector: list[tuple[str, int, str | None, bool]] = []
        self.reflector_hints: list[tuple[tuple[str, ...], dict[str, str]]] = []
        self.actor: list[tuple[ContextInputs, list[dict[str, str]]]] = []

    def observer_system_prompt(self, variant: str, *, multi_thread: bool, instruction: str | None = None,
                               thread_title: bool = False, hint_tags: Sequence[str] | None = None) -> str:
        self._multi = multi_thread
        return super().observer_system_prompt(variant, multi_thread=multi_thread, instruction=instruction,
                                              thread_title=thread_title, hint_tags=hint_tags)

    def observer_request(self, request: ObserverRequest, layout: str = "split") -> list[ChatMessage]:
        self.observer.append((self._multi, request))
        return super().observer_request(request, layout)

    def reflector_request(self, observations: str, level: int, *, guidance: str | None = None,
                          skip_continuation_hints: bool = False, anchor_ids: bool = True,
                          hint_tags: Sequence[str] = (), prior_hints: Mapping[str, str] | None = None) -> str:
        self.reflector.append((observations, level, guidance, skip_continuation_hints))
        self.reflector_hints.append((tuple(hint_tags), dict(prior_hints or {})))
        return super().reflector_request(observations, level, guidance=guidance,
                                         skip_continuation_hints=skip_continuation_hints, anchor_ids=anchor_ids,
                                         hint_tags=hint_tags, prior_hints=prior_hints)

    def actor_memory_messages(self, inputs: ContextInputs, layout: str = "chunked") -> list[dict[str, str]]:
        messages = super().actor_memory_messages(inputs, layout)
        self.actor.append((inputs, messages))
        return messages


@dataclass
class Recorder:
    """The stand-in models of the engine differential, keeping every request whole. The Reflector climbs: its first
    attempt on a text keeps every fact, the next every second, then every fourth (so each level is asked for)."""

    calls: list[tuple[str, list[dict[str, Any]]]]
    attempts: dict[str, int]
    climb: int = 2
    """Attempts on one text that keep (nearly) every fact before one keeps every fourth."""

    async def complete(self, messages: Sequence[ChatMessage], *, stage: str, settings: Any) -> ModelReply:
        self.calls.append((stage, [dict(m) for m in messages]))
        text = "\n".join(part for m in messages if m["role"] != "system" for part in parts(m["content"]))
        if stage == "observer":
            return ModelReply(observer_reply(text), settings.model, finish_reason="stop")
        attempt = self.attempts[text.split("\n---", 1)[0]] = self.attempts.get(text.split("\n---", 1)[0], -1) + 1
        facts = [line for line in text.splitlines() if line.startswith("* ") and "fact m" in line]
        kept = facts[:len(facts) - attempt] if attempt < self.climb else facts[::4]
        reply = reflector_reply(text) if attempt > self.climb else "<observations>\nDate: Jan 1, 2000\n" \
            + "\n".join(kept) + "\n</observations>"
        return ModelReply(reply, settings.model, finish_reason="stop")


def v1_3_config(scope: str, variant: str) -> OMConfig:
    """om=benchmark_era's engine (1.3's prompts: one Observer message, one actor message, all prior observations,
    blank-line joins) at small thresholds, with Mastra's reply rules."""
    return OMConfig(
        scope=scope,  # type: ignore[arg-type]  # thread or resource; OMConfig checks it
        observation=ObservationConfig(message_tokens=600, buffer_tokens=False, max_tokens_per_batch=400,
                                      previous_observer_tokens=False, request_layout="single",
                                      model=ModelSettings(model="test/om-eval-observer")),
        reflection=ReflectionConfig(observation_tokens=500 if scope == "resource" else 250, start_level=0,
                                    model=ModelSettings(model="test/om-eval-reflector", temperature=0.0)),
        obscure_thread_ids=True, context_layout="single", boundary_delimiters=False, reply_checks="mastra",
        prompt_variant="mastra_exact",
    )


def spec(message: Message) -> dict[str, Any]:
    """A message as the builders' oracle reads it (its wall-clock time, as both sides format it)."""
    at = message.created_at
    return {"id": message.id, "role": message.role, "text": message.text(),
            "createdAt": [at.year, at.month, at.day, at.hour, at.minute, at.second, at.microsecond // 1000]}


async def replay_v1_3(conversation: dict[str, Any], config: OMConfig, wording: RecordingWording,
                      recorder: Recorder) -> ObservationalMemory:
    memory = ObservationalMemory(config, observer=recorder, resource_id=conversation["resource"],
                                 token_counter=make_counter("tiktoken"), prompts=wording)
    accounting = PendingCounter("mastra_dev" if config.scope == "resource" else "exact")
    for session in conversation["sessions"]:
        for start in range(0, len(session["messages"]), 2):
            unit = session["messages"][start:start + 2]
            memory.add_messages(Message(m["id"], session["thread"], m["role"], m["text"],
                                        datetime.strptime(m["createdAt"], "%Y-%m-%dT%H:%M:%S.000Z")) for m in unit)
            await check_unit(memory, session["thread"], buffering=False, accounting=accounting)
    question = conversation["question"]
    asked = question["thread"] if config.scope == "resource" else conversation["sessions"][-1]["thread"]
    await check_question_turn(memory, asked, buffering=False, accounting=accounting)
    now = datetime.strptime(question["now"], "%Y-%m-%dT%H:%M:%S.000Z")
    memory.build_context(now, asked)
    # The thread-scope actor of the benchmark reads every thread's memory as one (om_eval.systems.om.answer): the last
    # thread's view is the one the engine builds; each thread's is compared too.
    for thread in [s["thread"] for s in conversation["sessions"]] if config.scope == "thread" else []:
        memory.build_context(now, thread)
    return memory


def expected_v1_3(builders: BuilderProcess, variant: str, wording: RecordingWording,
                  recorder: Recorder) -> Iterator[tuple[str, Any, Any]]:
    """(kind, om-eval's request, the builders' request) for every call the replay made and every actor view."""
    observer_calls = [messages for stage, messages in recorder.calls if stage == "observer"]
    reflector_calls = [messages for stage, messages in recorder.calls if stage == "reflector"]
    assert len(observer_calls) == len(wording.observer) and len(reflector_calls) == len(wording.reflector)
    for messages, (multi, asked) in zip(observer_calls, wording.observer):
        previous = asked.previous_observations or UNDEFINED
        system = builders.call("buildObserverSystemPrompt", multi, variant=variant)
        if multi:
            threads = [[t, {"$messages": [spec(m) for m in ms]}] for t, ms in asked.messages.items()]
            user = builders.call("buildMultiThreadObserverPrompt", previous, {"$map": threads}, list(asked.messages),
                                 variant=variant)
        else:
            user = builders.call("buildObserverPrompt", previous, {"$messages": [spec(m) for m in asked.messages[""]]},
                                 {"skipContinuationHints": asked.skip_continuation_hints}, variant=variant)
        yield "observer", requested(messages), [("system", [system]), ("user", [user])]
    system = builders.call("buildReflectorSystemPrompt", variant=variant)
    for messages, (observations, level, guidance, skip) in zip(reflector_calls, wording.reflector):
        user = builders.call("buildReflectorPrompt", observations, guidance or UNDEFINED, level, skip, variant=variant)
        yield "reflector", requested(messages), [("system", [system]), ("user", [user])]
    for inputs, messages in wording.actor:
        if not inputs.observations:  # 1.3 injects nothing before the first observation
            yield "actor", requested(messages), []
            continue
        other = builders.method("formatUnobservedContextBlocks", {"shouldObscureThreadIds": False},
                                {"$map": [[t, {"$messages": [spec(m) for m in ms]}]
                                          for t, ms in inputs.other_conversations.items()]}, "om-eval-current",
                                variant=variant)
        now = inputs.now
        text = builders.method("formatObservationsForContext", {}, inputs.observations,
                               inputs.current_task or UNDEFINED, inputs.suggested_response or UNDEFINED,
                               other or UNDEFINED, {"$date": [now.year, now.month, now.day, now.hour, now.minute]},
                               variant=variant)
        reminder = "<system-reminder>" + builders.get("OBSERVATION_CONTINUATION_HINT", variant=variant) \
            + "</system-reminder>"
        yield "actor", requested(messages), [("system", [text]), ("user", [reminder])]


V1_3_CELLS = [(scope, variant) for scope in ("resource", "thread") for variant in RELEASES["1.3.0"].variants]


@pytest.mark.parametrize(("scope", "variant"), V1_3_CELLS, ids=[f"{s}-{v}" for s, v in V1_3_CELLS])
def test_every_1_3_request_is_the_builders(scope: str, variant: str, tmp_path_factory: pytest.TempPathFactory,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    pack = real_pack(tmp_path_factory, "1.3.0", variant)
    config = v1_3_config(scope, variant)
    tally = Tally.new()
    levels: set[int] = set()
    rng = random.Random(SEED)
    with BuilderProcess(real_package(tmp_path_factory, "1.3.0"), RELEASES["1.3.0"].variants) as builders:
        for index in range(CONVERSATIONS // 2):
            conversation = Setting(scope, False, 600, 500, sessions=(3, 6) if scope == "resource" else (1, 3),
                                   pairs=(2, 8)).conversation(SEED + rng.randint(0, 10**6) + index)
            wording, recorder = RecordingWording(pack), Recorder([], {})
            asyncio.run(replay_v1_3(conversation, config, wording, recorder))
            for kind, ours, theirs in expected_v1_3(builders, variant, wording, recorder):
                tally.add(kind, ours, theirs, f"1.3.0 {scope} {variant} {conversation['resource']}")
            levels.update(level for _, level, _, _ in wording.reflector)
    with capsys.disabled():
        print("\n" + tally.lines(f"1.3.0 {scope} scope, {variant} prompts, against the builders (compression "
                                 f"levels {sorted(levels)})"))
    assert levels == set(RELEASES["1.3.0"].builders.compression_levels)
    assert tally.identical, "\n".join(tally.examples)


# --------------------------------------------------------------------------- 1.10.0 and 1.31.0: every compression level


@pytest.mark.parametrize("version", ["1.10.0", "1.31.0"])
def test_every_level_of_the_ladder_is_the_builders(version: str, tmp_path_factory: pytest.TempPathFactory,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The engine cells' stand-in Reflector compresses at its first attempt; here one that climbs (nearly every fact
    kept three times) makes the engine ask for every level its ladder reaches, each request checked against the
    release's builders with what it was filled from."""
    pack = real_pack(tmp_path_factory, version)
    setting = ENGINE_CELLS[f"{version} thread-sync"]
    extractors = RELEASES[version].builders.hint_extractors
    tally, levels = Tally.new(), set()
    with BuilderProcess(real_package(tmp_path_factory, version), RELEASES[version].variants) as builders:
        for index in range(CONVERSATIONS // 4):
            conversation = setting.conversation(SEED + 7919 * index)
            wording, recorder = RecordingWording(pack), Recorder([], {}, climb=3)
            memory = ObservationalMemory(setting.om_config(), observer=recorder, resource_id=conversation["resource"],
                                         token_counter=make_counter("tokenx"), prompts=wording)
            for session in conversation["sessions"]:
                for start in range(0, len(session["messages"]), 2):
                    memory.add_messages(
                        Message(m["id"], session["thread"], m["role"], m["text"],
                                datetime.strptime(m["createdAt"], "%Y-%m-%dT%H:%M:%S.000Z"))
                        for m in session["messages"][start:start + 2])
                    asyncio.run(check_unit(memory, session["thread"], buffering=False,
                                           accounting=PendingCounter("exact")))
            asked = [m for stage, m in recorder.calls if stage == "reflector"]
            assert len(asked) == len(wording.reflector)
            for messages, (observations, level, guidance, skip), (tags, prior) in zip(
                    asked, wording.reflector, wording.reflector_hints):
                args: list[Any] = [observations, guidance or UNDEFINED, level, skip]
                system_args: list[Any] = [UNDEFINED]
                if extractors:
                    args += [{"$extractors": {"kind": "reflection", "hints": list(tags), "threadTitle": False}},
                             prior or UNDEFINED]
                    system_args.append({"$extractors": {"kind": "reflection", "hints": list(tags),
                                                        "threadTitle": False}})
                theirs = [("system", [builders.call("buildReflectorSystemPrompt", *system_args)]),
                          ("user", [builders.call("buildReflectorPrompt", *args)])]
                tally.add("reflector", requested(messages), theirs, f"{version} {conversation['resource']}")
                levels.add(level)
    del tally.counts["observer"], tally.counts["actor"]
    with capsys.disabled():
        print("\n" + tally.lines(f"{version} reflector ladder, against the builders (levels {sorted(levels)})"))
    assert tally.identical, "\n".join(tally.examples)
    start = 0 if version == "1.10.0" else 1
    assert levels == set(range(start, start + 4))
