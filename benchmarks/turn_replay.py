"""What the turn-by-turn cost replay adds to building memories: CPU time of replaying S-sized synthetic questions
through OM with and without a :class:`~om_eval.bench.turn_costs.TurnRecorder`, alternated, best of ``--rounds``.

Writes ``--questions`` seeded S-sized questions (~115k tokens each) first (not measured), then replays each with
the zero-latency scripted model for the Observer and Reflector (the replay alone: no answering, judging or store),
and prints the CPU seconds of both, the time added per question and its share of the replay.
``benchmarks/harness.py --no-turns`` measures the same on the whole harness, where it is below the run-to-run noise.

Run: ``python benchmarks/turn_replay.py [--questions 25] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from om_eval.bench.answer import actor_prompts
    from om_eval.bench.replay import replay_question
    from om_eval.bench.turn_costs import TurnRecorder
    from om_eval.data import load_dataset
    from om_eval.data.synth import iter_generate, write_dataset
    from om_eval.llm.scripted.model import ScriptedModel
    from om_eval.om import OMConfig
    from om_eval.om.tokens import default_counter

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "synthetic-s.json"
        per_type = max(1, args.questions // 6)
        write_dataset(iter_generate(size="s", questions_per_type=per_type, abstention=0, seed=0), path)
        questions = list(load_dataset(path=path).questions)[: args.questions]
    config, instructions = OMConfig(), actor_prompts()["instructions"]
    turns = 0

    def replay(record: bool) -> float:
        nonlocal turns
        start = time.process_time()
        for question in questions:
            counter = default_counter()
            recorder = TurnRecorder(counter, instructions) if record else None
            model = ScriptedModel(history=0)
            asyncio.run(replay_question(question, config, observer=model, reflector=model, token_counter=counter,
                                        turns=recorder))
            if recorder is not None:
                turns += len(recorder.table)
        return time.process_time() - start

    replay(False)  # imports and first-use caches out of the way
    without, with_turns = [], []
    for _ in range(args.rounds):
        without.append(replay(False))
        with_turns.append(replay(True))
    best_without, best_with = min(without), min(with_turns)
    added = (best_with - best_without) / len(questions)
    print(f"{len(questions)} S-sized questions, {turns // args.rounds:,} user turns recorded per round")
    print(f"replay CPU time, best of {args.rounds}: {best_without:.2f} s without the recorder, {best_with:.2f} s with")
    print(f"added: {added * 1000:.1f} ms per question ({best_with / best_without - 1:+.1%} of the replay)")


if __name__ == "__main__":
    main()
