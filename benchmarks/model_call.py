"""What one model call costs the harness itself, with the model's own time near zero (the scripted model).

Three layers, each timed over ``--calls`` distinct requests and counted in a second pass (:mod:`measure`):

* ``litellm``: ``litellm.acompletion`` alone, as the client sends it (the scripted provider answers in microseconds);
* ``client``: the run's :class:`~om_eval.llm.client.LLMClient` with no response cache (request, key, ledger);
* ``client+cache``: the same with a fresh response cache (a miss, then the reply written and fsynced).

Why: a run of 500 S-sized questions makes about 9,000 model calls, so the per-call cost of these layers sets a floor
under the harness's overhead that no bookkeeping work in om-eval can lower. Prints, per call, wall time in loop
units (a 10⁷-step loop timed in the same process) and milliseconds, CPU time, and Python function calls counted in
every thread (the success handlers litellm runs on its worker threads included).

Run: ``python benchmarks/model_call.py [--calls 300]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections.abc import Awaitable, Callable

from measure import counting, cpu_seconds, loop_seconds

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

MODEL = "scripted/om-eval"
SYSTEM = "You answer questions about the user from what they told you."


def _messages(i: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Question {i}: where do I live, and what do I bake on Sundays? " * 8}]


def _layers(cache_root: str) -> dict[str, Callable[[int], Awaitable[object]]]:
    from om_eval.llm.cache import ResponseCache
    from om_eval.llm.client import LLMClient
    from om_eval.llm.providers import litellm_with_providers
    from om_eval.om.config import ModelSettings

    litellm = litellm_with_providers()
    settings = ModelSettings(model=MODEL, temperature=0.0, max_output_tokens=64)
    bare, cached = LLMClient(cache=None), LLMClient(cache=ResponseCache(cache_root))

    async def through_litellm(i: int) -> object:
        return await litellm.acompletion(model=MODEL, messages=_messages(i), temperature=0.0, max_tokens=64,
                                         timeout=60, num_retries=0)

    async def through_client(i: int) -> object:
        return await bare.complete(_messages(i), stage="actor", settings=settings)

    async def through_cache(i: int) -> object:
        return await cached.complete(_messages(i), stage="actor", settings=settings)

    return {"litellm": through_litellm, "client": through_client, "client+cache": through_cache}


def _run(call: Callable[[int], Awaitable[object]], first: int, calls: int) -> None:
    async def every() -> None:
        for i in range(first, first + calls):
            await call(i)

    asyncio.run(every())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    loop = loop_seconds()
    print(f"reference: a 10⁷-step loop took {loop:.3f} s in this process")
    with tempfile.TemporaryDirectory() as root:
        layers = _layers(root)
        for offset, (name, call) in enumerate(layers.items()):
            first = (offset + 1) * 1_000_000  # distinct requests per layer and pass: no cache hit anywhere
            _run(call, first - 1000, 20)  # warm: imports, first-call setup
            cpu, start = cpu_seconds(), time.perf_counter()
            _run(call, first, args.calls)
            wall, cpu = (time.perf_counter() - start) / args.calls, (cpu_seconds() - cpu) / args.calls
            with counting() as count:
                _run(call, first + args.calls, args.calls)
            time.sleep(0.2)  # litellm's worker threads finish their handlers before the count is read
            print(f"{name:>13}: per call {wall * 1000:6.2f} ms = {wall / loop * 1000:6.2f} milliloops wall, "
                  f"CPU {cpu * 1000:6.2f} ms, {count.python_calls / args.calls:8,.0f} Python calls "
                  f"({count.calls / args.calls:,.0f} with built-ins)")


if __name__ == "__main__":
    main()
