"""What the local model's prompt cache saves: wall time of a prompt whose prefix llama.cpp still holds, against the
same prompt evaluated from scratch.

Loads the embedded local model (``local/qwen2.5-coder-1.5b``; the ``local`` extra and its weights), then, through
litellm and om-eval's client as a run calls it:

1. a cold call: an agent's turn (instructions, a memory of ``--memory-words`` words, a question) on a fresh model;
2. a warm call: the next turn, the same prefix and one more exchange, right after it;
3. the same next turn cold: after an unrelated prompt has replaced the model's state and its saved states are
   dropped, so nothing is reused.

Prints, for each call, the prompt tokens, those the ledger recorded as cached (the prefix llama.cpp reused), the
tokens actually evaluated and the wall time; then the time the reuse saved on the next turn.

Run: ``python benchmarks/local_prefix_reuse.py [--memory-words 1500]``
"""

from __future__ import annotations

import argparse
import asyncio
import time

WORDS = ("Lisbon sourdough Sunday beagle Toby marathon April cousin Porto violin lessons Tuesday garden tomatoes "
         "basil novel chapter twelve bicycle commute rain jacket").split()


def _memory(words: int) -> str:
    lines = []
    for index in range(words // 12):
        picked = [WORDS[(index * 7 + k) % len(WORDS)] for k in range(10)]
        lines.append(f"* (day {index}) User mentioned " + " ".join(picked) + ".")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memory-words", type=int, default=1500)
    args = parser.parse_args()

    from om_eval.llm.client import LLMClient
    from om_eval.llm.local import get_local_provider
    from om_eval.llm.local_models import DEFAULT_LOCAL_MODEL
    from om_eval.om.config import ModelSettings

    settings = ModelSettings(model=f"local/{DEFAULT_LOCAL_MODEL}", temperature=0, max_output_tokens=16)
    turn = [{"role": "system", "content": "You answer the user from your memory of them. Be brief."},
            {"role": "system", "content": "<observations>\n" + _memory(args.memory_words) + "\n</observations>"},
            {"role": "user", "content": "Where do I live?"}]
    following = [*turn, {"role": "assistant", "content": "In Lisbon."},
                 {"role": "user", "content": "And what is my dog called?"}]
    unrelated = [{"role": "user", "content": "Name three prime numbers. " * 40}]
    client = LLMClient(cache=None)
    provider = get_local_provider()

    def call(messages: list[dict[str, str]], name: str) -> float:
        start = time.perf_counter()
        asyncio.run(client.complete(messages, stage="actor", settings=settings))
        seconds = time.perf_counter() - start
        record, stats = client.ledger.records[-1], provider.last_stats
        print(f"{name:<28} prompt {record.prompt_tokens:>6,} tokens, cached {record.cached_prompt_tokens or 0:>6,}, "
              f"evaluated {stats.prompt_tokens_evaluated:>6,}; {seconds:6.2f} s "
              f"(prompt evaluation {stats.prompt_seconds:.2f} s)")
        return seconds

    provider.load(DEFAULT_LOCAL_MODEL)
    call(turn, "turn 1, cold")
    warm = call(following, "turn 2, prefix reused")
    call(unrelated, "unrelated prompt")
    provider.unload()  # drops the saved states too: the next call starts from nothing
    provider.load(DEFAULT_LOCAL_MODEL)
    cold = call(following, "turn 2, from scratch")
    print(f"the reused prefix saved {cold - warm:.2f} s of {cold:.2f} s on turn 2 ({1 - warm / cold:.0%})")


if __name__ == "__main__":
    main()
