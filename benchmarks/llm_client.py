"""Speed of the model layer: cache hits, client overhead, and one real local-model call.

1. Cache-hit lookups per second: ``ResponseCache.get`` on stored entries (key computed beforehand), and
   ``cache_key`` + ``get`` together.
2. Client throughput at concurrency 32 against the zero-latency ``scripted`` provider, through
   ``litellm.acompletion``: with no cache, with a cold cache (every call stored) and with a warm one (every call a
   hit). The client must never be the bottleneck of a hosted-model run: target >= 200 calls/s.
3. One ``local`` call (Qwen2.5-Coder-1.5B through litellm): prompt and generation tokens per second, then the
   same prompt again (prompt-prefix reuse). Skipped with a note when ``om-eval[local]`` is not installed.

Run: ``python benchmarks/llm_client.py [--calls 2000] [--skip-local]``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import tempfile
import time
from pathlib import Path

from om_eval.llm import ClientSettings, LLMClient, LLMRequest, cache_key
from om_eval.llm.cache import CachedResponse, ResponseCache


def cache_hits_per_second(root: Path, entries: int = 2000, lookups: int = 20_000) -> tuple[float, float]:
    cache = ResponseCache(root)
    requests = [
        LLMRequest.build("openai/gpt-4o-mini", [{"role": "user", "content": f"question {i} " + "x" * 2000}],
                         temperature=0, max_tokens=256)
        for i in range(entries)
    ]
    keys = [cache_key(r, {"judge": "house@1"}) for r in requests]
    for key, request in zip(keys, requests):
        cache.put(key, CachedResponse("answer " * 150, request.model, 600, 150, 0.0002, "2026-01-01T00:00:00Z",
                                      request.model), request=request)
    start = time.perf_counter()
    for i in range(lookups):
        assert cache.get(keys[i % entries]) is not None
    get_rate = lookups / (time.perf_counter() - start)
    start = time.perf_counter()
    for i in range(lookups // 4):
        assert cache.get(cache_key(requests[i % entries], {"judge": "house@1"})) is not None
    key_and_get_rate = (lookups // 4) / (time.perf_counter() - start)
    cache.close()
    return get_rate, key_and_get_rate


async def _burst(client: LLMClient, calls: int, tag: str) -> float:
    requests = [
        LLMRequest.build("scripted/om-eval", [{"role": "user", "content": f"Question {tag}-{i}: where do I live?"}],
                         temperature=0)
        for i in range(calls)
    ]
    start = time.perf_counter()
    await asyncio.gather(*(client.call(r, stage="actor") for r in requests))
    return calls / (time.perf_counter() - start)


def client_throughput(root: Path, calls: int) -> dict[str, float]:
    settings = ClientSettings(default_concurrency=32)
    results = {}
    asyncio.run(_burst(LLMClient(settings=settings), 50, "warmup"))  # litellm import and first-call setup
    results["no cache"] = asyncio.run(_burst(LLMClient(settings=settings), calls, "a"))
    cache = ResponseCache(root)
    results["cold cache (miss + store)"] = asyncio.run(_burst(LLMClient(cache=cache, settings=settings), calls, "b"))
    results["warm cache (hits)"] = asyncio.run(_burst(LLMClient(cache=cache, settings=settings), calls, "b"))
    return results


def local_call() -> str:
    if importlib.util.find_spec("llama_cpp") is None:
        return "local model: skipped (install om-eval[local])"
    from om_eval.llm.client import LLMClient

    history = "\n".join(
        f"User (Mar {d}, 2025): I moved to Ghent for a job as a data engineer and adopted a beagle named Toby. "
        f"My sister Ana visits next month and we plan a trip to Bruges together to see the canals."
        for d in range(1, 16)
    )
    messages = [
        {"role": "system", "content": "You extract dated facts about the user as lines '* 🔴 (HH:MM) User stated "
                                      "...' inside <observations> tags."},
        {"role": "user", "content": history + "\n\nExtract the observations."},
    ]
    request = LLMRequest.build("local/qwen2.5-coder-1.5b", messages, temperature=0, max_tokens=100)
    client = LLMClient()
    from om_eval.llm.local import get_local_provider

    lines = []
    for attempt in ("first call", "same prompt again (prefix reuse)"):
        start = time.perf_counter()
        reply = asyncio.run(client.call(request, stage="observer", cache=False))
        seconds = time.perf_counter() - start
        stats = get_local_provider().last_stats
        rates = ""
        if stats is not None:
            prompt_rate = stats.prompt_tokens_per_second
            rates = (
                f"; {stats.prompt_tokens_evaluated} prompt tokens evaluated"
                + (f" at {prompt_rate:.0f} tok/s" if prompt_rate else "")
                + f", generation {stats.generation_tokens_per_second or 0:.1f} tok/s"
                + (f", model load {stats.load_seconds:.1f} s" if stats.load_seconds else "")
            )
        lines.append(
            f"local model, {attempt}: {reply.prompt_tokens} prompt + {reply.completion_tokens} generated tokens "
            f"in {seconds:.1f} s{rates}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--skip-local", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        get_rate, key_rate = cache_hits_per_second(Path(folder) / "hits")
        print(f"cache hits: {get_rate:,.0f} lookups/s (get); {key_rate:,.0f}/s (cache_key + get)   <- target >= 5,000")
        for name, rate in client_throughput(Path(folder) / "client", args.calls).items():
            print(f"client at concurrency 32 vs scripted, {name}: {rate:,.0f} calls/s   <- target >= 200")
    if not args.skip_local:
        print(local_call())


if __name__ == "__main__":
    main()
