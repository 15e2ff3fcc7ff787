"""What the turn-by-turn cost replay adds to building memories: CPU time of building S-sized synthetic questions'
memories with and without recording their turns, alternated, best of ``--rounds``.

Writes ``--questions`` seeded S-sized questions (~115k tokens each) first (not measured), then builds each memory
(the build alone: no answering, judging or store) and prints the CPU seconds of both, the time added per question
and its share of the build. ``--system om`` (the default) replays OM with the zero-latency scripted model for the
Observer and Reflector, with and without a :class:`~om_eval.bench.turn_costs.TurnRecorder`; ``simple_om`` (its
fallback observer: no model), ``rag_lme`` (BM25) and ``rag_mastra`` (the scripted embedding, computed in-process)
ingest through the memory seam with and without a :class:`~om_eval.bench.turn_costs.PartRecorder`.
``benchmarks/harness.py --no-turns`` measures OM's on the whole harness, where it is below the run-to-run noise.
For a seam system it also prints what the seam's own checks cost per question: the gold-free view of the history
and the digest of the built memory (taken after ingest and again after each answer).

Run: ``python benchmarks/turn_replay.py [--system om] [--questions 25] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from om_eval.memory.services import TurnRecording


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--system", default="om", choices=["om", "simple_om", "rag_lme", "rag_mastra"])
    args = parser.parse_args()

    from om_eval.bench.answer import actor_prompts
    from om_eval.bench.turn_costs import PartRecorder, TurnRecorder
    from om_eval.data import load_dataset
    from om_eval.data.synth import iter_generate, write_dataset
    from om_eval.memory.view import history_view
    from om_eval.om import OMConfig
    from om_eval.om.tokens import default_counter
    from om_eval.systems.om.replay import replay_question
    from om_eval.testing.scripted.model import ScriptedModel

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "synthetic-s.json"
        per_type = max(1, args.questions // 6)
        write_dataset(iter_generate(size="s", questions_per_type=per_type, abstention=0, seed=0), path)
        questions = list(load_dataset(path=path).questions)[: args.questions]
    config, instructions = OMConfig(), actor_prompts()["instructions"]
    turns = 0
    seam = {"view": 0.0, "digest": 0.0}

    def replay(record: bool) -> float:
        nonlocal turns
        start = time.process_time()
        for question in questions:
            counter = default_counter()
            if args.system == "om":
                recorder = TurnRecorder(counter, instructions) if record else None
                model = ScriptedModel(history=0)
                asyncio.run(replay_question(question, config, observer=model, reflector=model,
                                            token_counter=counter, turns=recorder))
                turns += len(recorder.table) if recorder is not None else 0
            else:
                parts = PartRecorder(counter) if record else None
                system = seam_system(args.system)
                viewed = time.process_time()
                history = history_view(question)
                seam["view"] += time.process_time() - viewed
                memory = asyncio.run(system.ingest(history, InProcessServices(counter, parts)))
                digested = time.process_time()
                system.memory_digest(memory)
                seam["digest"] += time.process_time() - digested
                turns += len(parts.table) if parts is not None else 0
        return time.process_time() - start

    replay(False)  # imports and first-use caches out of the way
    without, with_turns = [], []
    for _ in range(args.rounds):
        without.append(replay(False))
        with_turns.append(replay(True))
    best_without, best_with = min(without), min(with_turns)
    added = (best_with - best_without) / len(questions)
    print(f"{args.system}: {len(questions)} S-sized questions, {turns // args.rounds:,} user turns recorded per round")
    print(f"build CPU time, best of {args.rounds}: {best_without:.2f} s without recording turns, "
          f"{best_with:.2f} s with")
    print(f"added: {added * 1000:.1f} ms per question ({best_with / best_without - 1:+.1%} of the build)")
    if args.system != "om":
        builds = len(questions) * (2 * args.rounds + 1)
        print(f"seam checks per question: history view {seam['view'] / builds * 1000:.1f} ms, memory digest "
              f"{seam['digest'] / builds * 1000:.1f} ms (the digest is taken once more after each answer)")


def seam_system(name: str) -> Any:
    from om_eval.memory.registry import make_system

    options = {"simple_om": {"observer": "fallback"}, "rag_lme": {"retriever": "bm25"}, "rag_mastra": {}}[name]
    return make_system(name, options)


class InProcessServices(TurnRecording):
    """The harness's services without a client: no model besides the scripted embedding, computed here."""

    def __init__(self, counter: Any, turns: Any) -> None:
        self.options: dict[str, Any] = {}
        self.counter = counter
        self.turns = turns

    def count_tokens(self, text: str) -> int:
        return int(self.counter.count_text(text))

    async def complete(self, messages: Any, *, stage: str = "observer") -> str:
        raise RuntimeError("the benchmark's systems call no chat model")

    async def embed(self, texts: Any, *, model: str | None = None, stage: str = "retrieval") -> list[list[float]]:
        from om_eval.llm.providers import scripted_embedding

        return [scripted_embedding(text) for text in texts]


if __name__ == "__main__":
    main()
