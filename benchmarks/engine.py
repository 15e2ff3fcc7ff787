"""How long the OM engine's own bookkeeping takes, with model time taken out.

Feeds ~115k tokens of conversation (50 sessions x 10 user/assistant pairs) through a resource-scope memory with
the 1.10 defaults (observe at 30k, reflect above 40k, 10k per batch), checking the threshold after every pair as
the benchmark replay does, then builds the actor's context. The model is the scripted one; the time spent inside
its ``complete`` calls is measured and subtracted, so the figure is the engine's: token counting, threshold checks,
prompt rendering, parsing, section merging and context building.

With ``--buffering`` the same conversation goes into one thread-scope memory with 1.10's async buffering on
(its defaults: buffer every 6k tokens, activate at 30k down to a 6k floor, buffered reflection from 20k). With
``--buffering --scope resource`` it goes, one thread per session, into a resource-scope memory with om-eval's
resource buffering extension and the same defaults (1.10 has no buffering in resource scope).

Run: ``python benchmarks/engine.py [--repeats 5] [--buffering] [--scope thread|resource] [--estimator tokenx]``.
Prints the median of the repeats and the first run (which fills the tokenx per-piece cache; later runs, like later
questions of a benchmark run, find it warm), the median in loop units (:mod:`measure`: a 10⁷-step loop timed in
this process; target under 0.08 synchronous, 0.12 buffered) and, from one more run with every call counted, the
Python function calls of the engine's part (the model's own calls left out), a figure that does not move with
the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from dataclasses import replace
from datetime import timedelta

from measure import counting, loop_seconds

from om_eval.data.conversation import make_conversation
from om_eval.om import ObservationalMemory, ObservationConfig, OMConfig
from om_eval.om.tokens import count_message, default_counter, make_counter
from om_eval.systems.om.accounting import PENDING_ACCOUNTINGS, PendingCounter
from om_eval.systems.om.replay import check_unit
from om_eval.testing.scripted.model import ScriptedModel


class TimedModel(ScriptedModel):
    """The scripted model, with the time spent answering accumulated in ``model_seconds``; while calls are counted
    (``work``), the counting pauses inside the model, whose own calls are not the engine's work."""

    model_seconds: float = 0.0
    work = None

    async def complete(self, messages, *, stage, settings):
        start = time.perf_counter()
        if self.work is not None:
            self.work.profiles[0].disable()
        try:
            return self.reply(messages, stage=stage, model=settings.model)
        finally:
            if self.work is not None:
                self.work.profiles[0].enable()
            self.model_seconds += time.perf_counter() - start


def run_once(sessions: list, buffering: bool = False, scope: str = "resource", counter=None,
             release: str = "v1_10", accounting: str = "exact", work=None) -> dict[str, float]:
    model = TimedModel()
    model.work = work
    if scope == "thread":
        config = OMConfig(scope="thread", obscure_thread_ids=True, mastra_release=release,  # type: ignore[arg-type]  # a MastraRelease name; OMConfig checks it
                          observation=ObservationConfig(buffer_tokens=None if buffering else False))
    else:
        config = OMConfig(scope="resource", obscure_thread_ids=True, resource_buffering=buffering,
                          mastra_release=release)  # type: ignore[arg-type]  # a MastraRelease name; OMConfig checks it
    memory = ObservationalMemory(config, observer=model, token_counter=counter)
    counter_of_pending = PendingCounter(accounting)  # type: ignore[arg-type]  # a PendingAccounting name; PendingCounter checks it
    start = time.perf_counter()
    cpu_start = time.process_time()
    ingest = 0.0

    async def feed() -> int:
        nonlocal ingest
        observations = 0
        for session in sessions:
            for index in range(0, len(session.messages), 2):
                t0 = time.perf_counter()
                memory.add_messages(session.messages[index : index + 2])
                ingest += time.perf_counter() - t0
                # A pair is one agent turn: 1.x's first step (with buffering), then its threshold check, as the
                # benchmark replay runs it.
                thread = session.messages[index].thread_id
                observations += len(await check_unit(memory, thread, buffering=buffering,
                                                     accounting=counter_of_pending))
        return observations

    observations = asyncio.run(feed())
    t0 = time.perf_counter()
    asked = sessions[-1].messages[-1].thread_id if scope == "thread" else "question"
    context = memory.build_context(sessions[-1].started_at + timedelta(days=7), asked)
    context_seconds = time.perf_counter() - t0
    total = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    return {
        "total": total,
        "model": model.model_seconds,
        "engine": total - model.model_seconds,
        "engine_cpu": cpu - model.model_seconds,
        "ingest": ingest,
        "context": context_seconds,
        "observations": observations,
        "reflections": sum(e.kind in ("reflection", "reflection_activated") for e in memory.events),
        "buffered": sum(e.kind == "observation_buffered" for e in memory.events),
        "activations": sum(e.kind == "observation_activated" for e in memory.events),
        "calls": model.total_calls,
        "context_chars": sum(len(m["content"]) for m in context.messages),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--buffering", action="store_true",
                        help="async buffering on (default: synchronous observation)")
    parser.add_argument("--scope", choices=("thread", "resource"), default=None,
                        help="resource: one thread per session (default without --buffering); thread: the whole "
                             "conversation in one thread (default with --buffering)")
    parser.add_argument("--estimator", default="tiktoken", help="token estimator: tiktoken (o200k_base) or tokenx")
    parser.add_argument("--release", choices=("v1_10", "v1_31"), default="v1_10", help="om.mastra_release")
    parser.add_argument("--accounting", choices=PENDING_ACCOUNTINGS, default="exact",
                        help="replay.pending_accounting (exact with --buffering)")
    args = parser.parse_args()
    scope = args.scope or ("thread" if args.buffering else "resource")

    t0 = time.perf_counter()
    counter = make_counter(args.estimator)
    load = time.perf_counter() - t0
    sessions = make_conversation(50, 10, seed=11)
    if scope == "thread":  # one long thread, so that the thread's threshold is actually reached
        sessions = [replace(s, messages=tuple(replace(m, thread_id="haystack") for m in s.messages)) for s in sessions]
    messages = [m for s in sessions for m in s.messages]
    tokens = sum(count_message(m, default_counter()) for m in messages)
    estimated = sum(count_message(m, counter) for m in messages)

    loop = loop_seconds()
    runs = [run_once(sessions, args.buffering, scope, counter, args.release, args.accounting)
            for _ in range(args.repeats)]
    median = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    with counting() as work:
        run_once(sessions, args.buffering, scope, counter, args.release, args.accounting, work)
    engine_calls = work.python_calls
    print(f"conversation: {len(sessions)} sessions, {len(messages) // 2} pairs, {tokens:,} tokens (o200k_base), "
          f"{estimated:,} by {counter.name}")
    print(f"tokenizer load (once per process, not counted): {load:.3f} s")
    timing = "async buffering on" if args.buffering else f"synchronous, {args.accounting}"
    mode = f"{scope} scope, {args.release}, {timing}"
    if args.buffering and scope == "resource":
        mode += " (om-eval extension)"
    print(f"median of {args.repeats} runs ({mode}):")
    target = 0.12 if args.buffering else 0.08
    print(f"  engine bookkeeping (total - model time): {median['engine']:.3f} s = {median['engine'] / loop:.3f} "
          f"loop units   <- target < {target} (first run: {runs[0]['engine']:.3f} s; a 10⁷-step loop took "
          f"{loop:.3f} s)")
    print(f"  the same in CPU time (busy machine):     {median['engine_cpu']:.3f} s")
    print(f"    of which ingestion (token counting):   {median['ingest']:.3f} s")
    print(f"    of which final context build:          {median['context']:.4f} s")
    print(f"  scripted model time (excluded):          {median['model']:.3f} s")
    print(f"  wall total:                              {median['total']:.3f} s")
    print(f"  observations {median['observations']:.0f}, reflections {median['reflections']:.0f}, "
          f"model calls {median['calls']:.0f}, context {median['context_chars']:,.0f} chars")
    if args.buffering:
        print(f"  buffered passes {median['buffered']:.0f}, activations {median['activations']:.0f}")
    print(f"  work: {engine_calls:,} Python function calls in the engine's part of one more run (the model's own "
          "left out)")
    print(f"engine: {mode}, {median['engine'] / loop:.3f} loops, CPU {median['engine_cpu'] / loop:.3f} loops, "
          f"work {engine_calls:,} calls")


if __name__ == "__main__":
    main()
