"""Whether the memory's cost per message stays flat as one conversation grows to millions of tokens.

BEAM has conversations of 1M and 10M tokens, each one haystack for one memory. Anything in the engine that re-reads
the history (or every thread's queue) per message turns quadratic there: invisible at LongMemEval's 115k tokens,
hours at 10M. So this feeds ONE synthetic conversation of N tokens (``--sizes``, millions: 1, 2, 5 and 10 by
default; ``--quick``: 0.1, 0.2, 0.5 and 1) through a memory, one user/assistant pair at a time with the threshold
check after every pair, as :mod:`engine` and the benchmark replay do, and compares the time per million tokens
across sizes. The model is the scripted one; time spent inside it is measured and subtracted, so the figures are
the engine's own.

Modes (``--modes``, default ``sync,buffered``):

* ``sync``: resource scope, one thread per session, 1.10 defaults, synchronous observation;
* ``buffered``: thread scope, the whole conversation in one thread, 1.10's async buffering on;
* ``simple`` (selectable): the simple layer (:mod:`om_eval.simple_om`), resource scope, the chat-model observer
  over the scripted model; a user turn arrives as an input item, an assistant turn as the model's output;
* ``rag_mastra`` (selectable): the Mastra-recall RAG system's ingest (every message embedded, by a hashed
  bag-of-words stand-in of ``RAG_DIMENSIONS`` dimensions, its time subtracted like the model's) and one question's
  context. Its index grows with the conversation by design, so its size is printed; it builds from the whole
  history at once, so that history is in memory (and in its peak) too. Turn recording (``run.turn_costs``), which
  searches the index at every user turn and so grows with the history by design, is left out.

Each size's conversation is a prefix of the next one's, so besides the time per million tokens of the whole run
the table gives the marginal one (``marg/M``): the extra engine time per extra million tokens from the previous
size, i.e. the cost of messages arriving on a longer history. The smallest size also pays for the memory's filling
up (no reflection before ~0.2M tokens, then observations creeping up to the reflection threshold), so a flat
engine shows a whole-run ratio somewhat above 1 over a small first size; the marginal figures leave that out.
``obs tok`` is the size of the active observations at the end. The scripted Reflector only shortens lines, so
from about 2M tokens it could not bring them under the reflection threshold any more: the engine deferred
reflection with growing gaps (``deferred``) and the observations, and the engine's per-observation work with them,
grew without bound (496k tokens at 5M). That measured the stand-in, so here the Reflector also keeps only its newest
lines (:class:`TimedModel`), as a working one keeps the observations under the threshold.

Each (mode, size) runs in a fresh child process, so that its peak RSS is its own. The conversation is generated
lazily, 50 sessions at a time (a fresh seed and a later start each time, thread and message ids renumbered), and
generation is outside the timed part. The time is also printed in loop units (:mod:`measure`: a 10⁷-step loop
timed in the child) and as CPU time.

Targets: time per million tokens at the largest size at most 1.2 times that at the smallest, in loop units (each child
times the loop before and after its run and keeps the faster), and under 2 GB peak RSS at 10M tokens. The last line
gives the worst ratio and the largest peak over the modes run. Each (mode, size) runs ``--repeats`` times (default 3)
and the fastest run counts. The ratio divides every size by one loop, the fastest any child timed: the loop's own timing
moved from 0.29 to 0.54 s within one size's runs, so a loop per size made the ratio follow the loop (synchronous 1.33
where the seconds gave 1.06). On a shared machine the same run also took 2.4 to 3.6 s per million tokens within minutes
while its loop stayed within 6 %, so a neighbour's burst during one run, not growth, moved single-run ratios by 0.3 to
0.5.

With ``--count`` each child also counts the Python function calls of the timed parts (the model's own left out),
and the ratios and the last line (``scale: ... work per million tokens``) are of calls per million tokens: a figure
that does not move with the machine's load, where one slow minute can move a time ratio by 0.3.

Run (from ``benchmarks/``): ``python scale.py [--sizes 1,2,5,10] [--quick] [--count] [--repeats 3]
[--modes sync,buffered,simple,rag_mastra]``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import math
import resource
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta

from om_eval.data.conversation import Session, make_conversation
from om_eval.om.tokens import count_message, default_counter
from om_eval.testing.scripted.model import ScriptedModel

MODES = ("sync", "buffered", "simple", "rag_mastra")
PAIRS_PER_SESSION = 10
CHUNK_SESSIONS = 50
SAMPLE_SESSIONS = 20
RAG_DIMENSIONS = 64
#: What the benchmark's Reflector keeps (:class:`TimedModel`): about 10k tokens, a quarter of 1.10's 40k threshold.
KEEP_CHARS = 40_000
TARGET_RATIO = 1.2
TARGET_PEAK_GB = 2.0


class TimedModel(ScriptedModel):
    """The scripted model, with the time spent answering accumulated in ``model_seconds``.

    With ``keep_chars``, a Reflector that also forgets: of the scripted Reflector's reply only the newest lines
    within ``keep_chars`` characters are kept. The scripted Reflector only shortens lines and keeps every date
    header, so a conversation of thousands of sessions outgrows any reflection threshold: the engine then defers
    reflection with growing gaps and the observations grow without bound, which measures the stand-in, not the
    engine. A working Reflector brings the observations well under the threshold; this one does too.
    """

    model_seconds: float = 0.0
    keep_chars: int | None = None

    async def complete(self, messages, *, stage, settings):
        start = time.perf_counter()
        if COUNTER is not None:
            COUNTER.disable()  # the model's own calls are not the engine's work
        try:
            reply = self.reply(messages, stage=stage, model=settings.model)
            if stage == "reflector" and self.keep_chars is not None:
                reply = replace(reply, text=_newest(reply.text, self.keep_chars))
            return reply
        finally:
            if COUNTER is not None:
                COUNTER.enable()
            self.model_seconds += time.perf_counter() - start


def _newest(reply: str, keep_chars: int) -> str:
    """A Reflector reply with only its newest observation lines, at most ``keep_chars`` characters of them."""
    head, opened, rest = reply.partition("<observations>\n")
    body, closed, tail = rest.partition("\n</observations>")
    if not opened or not closed or len(body) <= keep_chars:
        return reply
    lines, size = [], 0
    for line in reversed(body.split("\n")):
        size += len(line) + 1
        if size > keep_chars:
            break
        lines.append(line)
    return head + opened + "\n".join(reversed(lines)) + closed + tail


def conversation(sessions: int, one_thread: bool, seed: int = 11) -> Iterator[list[Session]]:
    """``sessions`` sessions in chunks, dates increasing throughout, ids unique (every message in thread
    ``haystack`` with ``one_thread``)."""
    start = datetime(1990, 1, 8, 9, 30)
    made = 0
    while made < sessions:
        batch = make_conversation(min(CHUNK_SESSIONS, sessions - made), PAIRS_PER_SESSION, seed=seed + made,
                                  start=start)
        renamed = []
        for offset, session in enumerate(batch):
            name = f"session-{made + offset:06d}"
            thread = "haystack" if one_thread else name
            messages = tuple(replace(m, id=f"{name}-m{turn:03d}", thread_id=thread)
                             for turn, m in enumerate(session.messages))
            renamed.append(replace(session, thread_id=thread, messages=messages))
        yield renamed
        made += len(batch)
        start = batch[-1].started_at + timedelta(days=3)


def tokens_per_pair() -> float:
    """The average pair's tokens (o200k_base, message overhead included), from a small sample."""
    sample = make_conversation(SAMPLE_SESSIONS, PAIRS_PER_SESSION, seed=3)
    counter = default_counter()
    return sum(count_message(m, counter) for s in sample for m in s.messages) / (SAMPLE_SESSIONS * PAIRS_PER_SESSION)


# -- the child: one mode at one size --------------------------------------------------------------------------------


#: With ``--count``: the profiler counting the calls of the timed parts, paused inside the model (:class:`TimedModel`).
COUNTER: cProfile.Profile | None = None


class Clock:
    """Wall and CPU time of the timed parts only (generation between them is not counted), and their calls when
    counting."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0

    def __enter__(self) -> Clock:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        if COUNTER is not None:
            COUNTER.enable()
        return self

    def __exit__(self, *_: object) -> None:
        if COUNTER is not None:
            COUNTER.disable()
        self.wall += time.perf_counter() - self._wall
        self.cpu += time.process_time() - self._cpu


def python_calls(profile: cProfile.Profile) -> int:
    """Calls of functions written in Python that ``profile`` counted (:attr:`measure.WorkCount.python_calls`)."""
    from measure import WorkCount

    return WorkCount([profile]).python_calls


async def feed_om(mode: str, sessions: int) -> dict:
    from om_eval.om import ObservationalMemory, ObservationConfig, OMConfig
    from om_eval.systems.om.accounting import PendingCounter
    from om_eval.systems.om.replay import check_unit

    buffering = mode == "buffered"
    model = TimedModel()
    model.keep_chars = KEEP_CHARS
    if buffering:
        config = OMConfig(scope="thread", obscure_thread_ids=True, mastra_release="v1_10",
                          observation=ObservationConfig(buffer_tokens=None))
    else:
        config = OMConfig(scope="resource", obscure_thread_ids=True, mastra_release="v1_10")
    memory = ObservationalMemory(config, observer=model)
    accounting = PendingCounter("exact")
    clock = Clock()
    messages = 0
    last: Session | None = None
    for chunk in conversation(sessions, one_thread=buffering):
        with clock:
            for session in chunk:
                for index in range(0, len(session.messages), 2):
                    memory.add_messages(session.messages[index: index + 2])
                    await check_unit(memory, session.messages[index].thread_id, buffering=buffering,
                                     accounting=accounting)
                messages += len(session.messages)
        last = chunk[-1]
    assert last is not None
    context = Clock()
    with context:
        memory.build_context(last.started_at + timedelta(days=7), "haystack" if buffering else "question")
    return {
        "wall": clock.wall, "cpu": clock.cpu, "model": model.model_seconds, "calls": model.total_calls,
        "messages": messages, "tokens": sum(memory._message_tokens.values()), "context": context.wall,
        "observations": sum(e.kind in ("observation", "observation_activated") for e in memory.events),
        "reflections": sum(e.kind in ("reflection", "reflection_activated") for e in memory.events),
        "deferred": sum(e.kind == "reflection_deferred" for e in memory.events),
        "observation_tokens": memory.record(last.messages[-1].thread_id).observation_token_count,
    }


async def feed_simple(sessions: int) -> dict:
    from om_eval.simple_om import SimpleObservationalMemory
    from om_eval.simple_om.llm_observer import llm_observer

    model = TimedModel()
    counter = default_counter()
    counted = 0

    def count(text: str) -> int:
        nonlocal counted
        tokens = counter.count_text(text)
        counted += tokens
        return tokens

    async def complete(messages) -> str:
        start = time.perf_counter()
        try:
            return model.reply(messages, stage="observer", model="scripted").text
        finally:
            model.model_seconds += time.perf_counter() - start

    memory = SimpleObservationalMemory(observer=llm_observer(complete), count_tokens=count)
    clock = Clock()
    messages = 0
    for chunk in conversation(sessions, one_thread=False):
        with clock:
            for session in chunk:
                for message in session.messages:
                    item = {"type": "message", "role": message.role, "content": message.content}
                    if message.role == "assistant":
                        await memory.store([item], thread_id=message.thread_id, resource_id="user")
                    else:
                        await memory.on_item_append(item, thread_id=message.thread_id, resource_id="user")
                messages += len(session.messages)
    context = Clock()
    with context:
        memory.recall(thread_id="question", resource_id="user")
    state = memory.state(resource_id="user")
    return {"wall": clock.wall, "cpu": clock.cpu, "model": model.model_seconds, "calls": model.total_calls,
            "messages": messages, "tokens": counted, "context": context.wall, "observations": state.version,
            "observation_tokens": sum(counter.count_text(o) for o in state.observations)}


class RagServices:
    """What rag_mastra borrows from the harness: a hashed bag-of-words embedder (timed, like the model) and no
    turn recording."""

    turns = None
    recording_turns = False

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self._slots: dict[str, int] = {}

    def count_tokens(self, text: str) -> int:
        return default_counter().count_text(text)

    async def embed(self, texts, *, model=None, stage=None) -> list[list[float]]:
        start = time.perf_counter()
        vectors = []
        for text in texts:
            vector = [0.0] * RAG_DIMENSIONS
            for word in text.lower().split():
                slot = self._slots.get(word)
                if slot is None:
                    slot = self._slots[word] = zlib.crc32(word.encode()) % RAG_DIMENSIONS
                vector[slot] += 1.0
            vectors.append(vector)
        self.calls += 1
        self.seconds += time.perf_counter() - start
        return vectors


async def feed_rag(sessions: int) -> dict:
    from om_eval.memory import HistoryView, QuestionView
    from om_eval.memory.view import SessionView, TurnView
    from om_eval.systems.rag_mastra import MastraRecallSystem

    views = []
    counter = default_counter()
    tokens = 0
    for chunk in conversation(sessions, one_thread=False):
        for session in chunk:
            index = len(views)
            prefix = f"{session.thread_id}#{index}"
            views.append(SessionView(prefix, session.thread_id, index, session.started_at,
                                     session.started_at.strftime("%Y/%m/%d (%a) %H:%M"),
                                     tuple(TurnView(f"{prefix}:{p}", m.role, str(m.content))
                                           for p, m in enumerate(session.messages))))
            tokens += sum(count_message(m, counter) for m in session.messages)
    history = HistoryView("user", tuple(views))
    asked = views[-1].date + timedelta(days=7)
    question = QuestionView("q", "Which city did I visit with Farah for bouldering?", asked,
                            asked.strftime("%Y/%m/%d (%a) %H:%M"), "user")
    system = MastraRecallSystem({})
    services = RagServices()
    clock = Clock()
    with clock:
        index = await system.ingest(history, services)  # type: ignore[arg-type]  # the stand-in has what it reads
    context = Clock()
    with context:
        await system.context(index, question, services)  # type: ignore[arg-type]
    return {"wall": clock.wall, "cpu": clock.cpu, "model": services.seconds, "calls": services.calls,
            "messages": len(index.messages), "tokens": tokens, "context": context.wall,
            "index_chunks": len(index.chunk_owner), "index_mb": index.vectors.nbytes / 1e6}


def child(mode: str, sessions: int, count: bool = False) -> dict:
    global COUNTER
    from measure import loop_seconds

    default_counter().count_text("warm")  # the tokenizer loads once per process: not the engine's cost
    if count:
        COUNTER = cProfile.Profile()
    loop = loop_seconds()
    if mode in ("sync", "buffered"):
        figures = asyncio.run(feed_om(mode, sessions))
    elif mode == "simple":
        figures = asyncio.run(feed_simple(sessions))
    else:
        figures = asyncio.run(feed_rag(sessions))
    figures["loop"] = min(loop, loop_seconds())
    figures["peak_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    figures["engine"] = figures["wall"] - figures["model"]
    figures["engine_cpu"] = figures["cpu"] - figures["model"]
    if COUNTER is not None:
        figures["python_calls"] = python_calls(COUNTER)
    return figures


# -- the parent ------------------------------------------------------------------------------------------------------


def _run_child(mode: str, sessions: int, count: bool, millions: float) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", mode, str(sessions), *(["--count"] if count else [])],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{mode} at {label(millions)} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def label(millions: float) -> str:
    return f"{millions:g}M"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1,2,5,10", help="conversation sizes in millions of tokens")
    parser.add_argument("--quick", action="store_true", help="sizes 0.1,0.2,0.5,1 (a fast check)")
    parser.add_argument("--modes", default="sync,buffered", help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--count", action="store_true",
                        help="count the engine's Python function calls instead of trusting the clock: slower, but "
                             "the ratio does not move with the machine's load")
    parser.add_argument("--repeats", type=int, default=3,
                        help="children per (mode, size) when timing; the fastest counts (default 3; 1 with --count)")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "SESSIONS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), count=args.count)))
        return

    if args.repeats < 1:
        parser.error("--repeats: at least 1")
    repeats = args.repeats
    sizes = [0.1, 0.2, 0.5, 1.0] if args.quick else sorted(float(s) for s in args.sizes.split(","))
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"--modes: unknown {', '.join(unknown)}; choose from {', '.join(MODES)}")
    per_pair = tokens_per_pair()
    print(f"~{per_pair:.0f} tokens per pair (o200k_base), {PAIRS_PER_SESSION} pairs per session; engine = wall - "
          "model time; s/M = engine s per million tokens fed; marg/M = the same for the tokens added since the "
          "previous size")
    print(f"{'mode':<10} {'size':>5} {'tokens':>11} {'messages':>9} {'calls':>6} {'obs':>5} {'refl':>4} {'defer':>5} "
          f"{'obs tok':>8} {'engine s':>9} {'s/M':>6} {'loops/M':>7} {'marg/M':>6} {'cpu s':>7} {'ctx s':>6} "
          f"{'peak GB':>7} {'runs s':>7}")
    per_million: dict[str, list[float]] = {}
    loops: list[float] = []  # every child's fastest reference loop (timing only)
    added: dict[str, list[float]] = {}  # with --count: calls per million tokens added since the previous size
    peaks: list[float] = []
    for mode in modes:
        previous: dict | None = None
        for millions in sizes:
            sessions = max(1, math.ceil(millions * 1e6 / (per_pair * PAIRS_PER_SESSION)))
            start = time.perf_counter()
            runs = [_run_child(mode, sessions, args.count, millions) for _ in range(1 if args.count else repeats)]
            # The fastest run and the fastest loop: the same work each time, and a busy neighbour only ever slows
            # one down (the same run took 2.4 to 3.6 s per million tokens within minutes, its loop unchanged). Each
            # is the machine's unhindered speed; their ratio across runs would favour a run whose loop was slowed.
            f = dict(min(runs, key=lambda run: run["engine"]), loop=min(run["loop"] for run in runs),
                     peak_gb=max(run["peak_gb"] for run in runs))
            spread = [f"{run['engine'] / (run['tokens'] / 1e6):.2f} s/M, loop {run['loop']:.3f} s" for run in runs]
            rate = f["engine"] / (f["tokens"] / 1e6)
            marginal = "" if previous is None else \
                f"{(f['engine'] - previous['engine']) / ((f['tokens'] - previous['tokens']) / 1e6):.2f}"
            if args.count and previous is not None:
                added.setdefault(mode, []).append(
                    (f["python_calls"] - previous["python_calls"]) / ((f["tokens"] - previous["tokens"]) / 1e6))
            previous = f
            if args.count:  # calls per million tokens: the same whatever the machine's load
                per_million.setdefault(mode, []).append(f["python_calls"] / (f["tokens"] / 1e6))
            else:  # seconds now; divided by one loop for every size at the end
                per_million.setdefault(mode, []).append(rate)
                loops.append(f["loop"])
            peaks.append(f["peak_gb"])
            print(f"{mode:<10} {label(millions):>5} {f['tokens']:>11,} {f['messages']:>9,} {f['calls']:>6,} "
                  f"{f.get('observations', 0):>5} {f.get('reflections', 0):>4} {f.get('deferred', 0):>5} "
                  f"{f.get('observation_tokens', 0):>8,} {f['engine']:>9.2f} {rate:>6.2f} {rate / f['loop']:>7.1f} "
                  f"{marginal:>6} {f['engine_cpu']:>7.2f} {f['context']:>6.3f} {f['peak_gb']:>7.2f} "
                  f"{time.perf_counter() - start:>7.1f}", flush=True)
            if len(runs) > 1:
                print(f"{'':<10} the {len(runs)} runs: {'; '.join(spread)}", flush=True)
            if args.count:
                print(f"{'':<10} work: {f['python_calls']:,} Python calls, {per_million[mode][-1]:,.0f} per million "
                      "tokens (the times above are slowed by counting)", flush=True)
            if "index_chunks" in f:
                print(f"{'':<10} rag index: {f['index_chunks']:,} chunks, {f['index_mb']:.1f} MB of vectors "
                      f"({RAG_DIMENSIONS} dimensions; x{1536 / RAG_DIMENSIONS:.0f} at 1536)", flush=True)

    span = f"{label(sizes[-1])}/{label(sizes[0])}"
    ratios = {mode: rates[-1] / rates[0] for mode, rates in per_million.items()}
    reference = min(loops, default=0.0)
    for mode, ratio in ratios.items():
        verdict = "flat" if ratio <= TARGET_RATIO else "GROWS"
        unit = "Python calls" if args.count else "time in loop units"
        detail = "" if args.count else (
            f", {per_million[mode][0] / reference:.1f} and {per_million[mode][-1] / reference:.1f} loop units per "
            f"million tokens at the fastest loop of all the children ({reference:.3f} s)")
        print(f"{mode}: {span} per million tokens, {unit}: {ratio:.2f} ({verdict}; target <= {TARGET_RATIO}){detail}")
    for mode, rates in added.items():
        if len(rates) > 1:
            print(f"{mode}: marginal Python calls per million tokens {rates[0]:,.0f} ({label(sizes[0])} to "
                  f"{label(sizes[1])}) and {rates[-1]:,.0f} ({label(sizes[-2])} to {label(sizes[-1])}): "
                  f"{rates[-1] / rates[0]:.2f} (the memory's filling up left out)")
    print(f"targets: ratio <= {TARGET_RATIO}, peak < {TARGET_PEAK_GB} GB at 10M tokens; the line below takes the "
          "worst mode's ratio and the largest peak")
    measure = "work" if args.count else "time"
    print(f"scale: {span} {measure} per million tokens {max(ratios.values()):.2f}, peak {max(peaks):.2f} GB")


if __name__ == "__main__":
    main()
