"""The figures benchmarks print beside wall time (``benchmarks/measure.py``), and the scale benchmark's Reflector."""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path
from types import ModuleType

FOLDER = Path(__file__).resolve().parents[2] / "benchmarks"


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"{name}_benchmark_script", FOLDER / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    sys.path.insert(0, str(FOLDER))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(FOLDER))
    return module


def _work(n: int) -> int:
    def step(i: int) -> int:
        return i + 1

    total = 0
    for i in range(n):
        total = step(total) + len(str(i))
    return total


def test_calls_are_counted_in_every_thread_and_the_same_on_every_run() -> None:
    measure = _script("measure")

    def counted(n: int) -> tuple[int, int]:
        with measure.counting() as work:
            _work(n)
            worker = threading.Thread(target=_work, args=(n,))
            worker.start()
            worker.join()
        return work.python_calls, work.calls

    first, again, double = counted(200), counted(200), counted(400)
    assert first == again  # deterministic for a fixed input
    # Each run of _work calls step n times in each of the two threads: the worker thread is counted too.
    assert double[0] - first[0] == 2 * 200
    assert first[1] > first[0]  # built-ins (len, str) counted apart
    assert measure.WorkCount().top() == "" and measure.WorkCount().calls == 0  # nothing counted: nothing printed


def test_the_reference_loop_is_timed_as_python_c_runs_it() -> None:
    measure = _script("measure")
    assert 0 < measure.loop_seconds(repeats=1) < 60
    assert measure.loops(1.0, 0.5) == "2.00 loops"


def test_the_scale_benchmarks_reflector_keeps_its_newest_lines_within_the_budget() -> None:
    scale = _script("scale")
    body = "\n".join(f"* 🔴 (09:{i:02d}) line {i}" for i in range(40))
    reply = f"<observations>\n{body}\n</observations>\n<current-task>x</current-task>"
    kept = scale._newest(reply, 100)
    inner = kept.split("<observations>\n", 1)[1].split("\n</observations>", 1)[0]
    assert len(inner) <= 100 and inner.endswith("line 39") and body.endswith(inner)
    assert kept.endswith("\n</observations>\n<current-task>x</current-task>")
    assert scale._newest(reply, 10_000) == reply and scale._newest("no tags", 5) == "no tags"


def test_the_model_call_benchmark_sends_distinct_requests_through_each_layer(tmp_path: Path) -> None:
    import asyncio

    bench = _script("model_call")
    layers = bench._layers(str(tmp_path))
    assert list(layers) == ["litellm", "client", "client+cache"]
    replies = [asyncio.run(call(i)) for i, call in enumerate(layers.values())]
    assert all(replies)
    assert bench._messages(1) != bench._messages(2)  # every timed call misses the cache
    assert len(list((tmp_path / "entries").rglob("*.json"))) == 1  # only the cached layer wrote its reply
