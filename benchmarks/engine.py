"""How long the OM engine's own bookkeeping takes, with model time taken out.

Feeds ~115k tokens of conversation (50 sessions x 10 user/assistant pairs) through a resource-scope memory with
the 1.10 defaults (observe at 30k, reflect above 40k, 10k per batch), checking the threshold after every pair as
the benchmark replay does, then builds the actor's context. The model is the scripted one; the time spent inside
its ``complete`` calls is measured and subtracted, so the figure is the engine's: token counting, threshold checks,
prompt rendering, parsing, section merging and context building.

Run: ``python benchmarks/engine.py [--repeats 5]``. Prints the median of the repeats.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from datetime import timedelta

from om_eval.demo import make_conversation
from om_eval.om import ObservationalMemory, OMConfig
from om_eval.om.scripted import ScriptedModel
from om_eval.om.tokens import count_message, default_counter


class TimedModel(ScriptedModel):
    """The scripted model, with the time spent answering accumulated in ``model_seconds``."""

    model_seconds: float = 0.0

    async def complete(self, messages, *, stage, settings):  # noqa: ANN001, ANN201
        start = time.perf_counter()
        try:
            return self.reply(messages, stage=stage, model=settings.model)
        finally:
            self.model_seconds += time.perf_counter() - start


def run_once(sessions: list) -> dict[str, float]:
    model = TimedModel()
    memory = ObservationalMemory(OMConfig(scope="resource", obscure_thread_ids=True), observer=model)
    start = time.perf_counter()
    ingest = 0.0

    async def feed() -> int:
        nonlocal ingest
        observations = 0
        for session in sessions:
            for index in range(0, len(session.messages), 2):
                t0 = time.perf_counter()
                memory.add_messages(session.messages[index : index + 2])
                ingest += time.perf_counter() - t0
                if await memory.observe() is not None:
                    observations += 1
        return observations

    observations = asyncio.run(feed())
    t0 = time.perf_counter()
    context = memory.build_context(sessions[-1].started_at + timedelta(days=7))
    context_seconds = time.perf_counter() - t0
    total = time.perf_counter() - start
    return {
        "total": total,
        "model": model.model_seconds,
        "engine": total - model.model_seconds,
        "ingest": ingest,
        "context": context_seconds,
        "observations": observations,
        "reflections": sum(e.kind == "reflection" for e in memory.events),
        "calls": model.total_calls,
        "context_chars": sum(len(m["content"]) for m in context.messages),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    t0 = time.perf_counter()
    counter = default_counter()
    load = time.perf_counter() - t0
    sessions = make_conversation(50, 10, seed=11)
    messages = [m for s in sessions for m in s.messages]
    tokens = sum(count_message(m, counter) for m in messages)

    runs = [run_once(sessions) for _ in range(args.repeats)]
    median = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    print(f"conversation: {len(sessions)} sessions, {len(messages) // 2} pairs, {tokens:,} tokens (o200k_base)")
    print(f"tokenizer load (once per process, not counted): {load:.3f} s")
    print(f"median of {args.repeats} runs:")
    print(f"  engine bookkeeping (total - model time): {median['engine']:.3f} s   <- target < 0.5 s")
    print(f"    of which ingestion (token counting):   {median['ingest']:.3f} s")
    print(f"    of which final context build:          {median['context']:.4f} s")
    print(f"  scripted model time (excluded):          {median['model']:.3f} s")
    print(f"  wall total:                              {median['total']:.3f} s")
    print(f"  observations {median['observations']:.0f}, reflections {median['reflections']:.0f}, "
          f"model calls {median['calls']:.0f}, context {median['context_chars']:,.0f} chars")


if __name__ == "__main__":
    main()
