"""The response cache: key completeness, process safety, kill safety, persistent stats, and its CLI."""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from om_eval.cli.cache import add_parser as add_cache_parser
from om_eval.cli.cache import run as run_cache_command
from om_eval.llm.cache import CachedResponse, ResponseCache, default_cache_dir
from om_eval.llm.request import LLMRequest, cache_key

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FORK = multiprocessing.get_context("fork")


def _response(text: str = "yes", cost: float | None = 0.01) -> CachedResponse:
    return CachedResponse(
        text=text,
        model="gpt-4o-mini-2024-07-18",
        prompt_tokens=120,
        completion_tokens=3,
        cost_usd=cost,
        created_at="2026-01-01T00:00:00+00:00",
        request_model="openai/gpt-4o-mini",
    )


def _key(index: int) -> str:
    return hashlib.sha256(f"key-{index}".encode()).hexdigest()


def _indexed_response(index: int, variant: int = 0, size: int = 40) -> CachedResponse:
    return _response(text=f"answer {index} v{variant} " * size, cost=index / 1000)


def _entry_path(root: Path, key: str) -> Path:
    return root / "entries" / key[:2] / f"{key}.json"


# -- key completeness -------------------------------------------------------------------------------------------


def _base() -> dict[str, Any]:
    return {
        "model": "openai/gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "You grade answers."},
            {"role": "user", "content": "Is 2 + 2 = 4?", "name": "alice"},
        ],
        "params": {
            "temperature": 0,
            "max_tokens": 256,
            "top_p": 1,
            "seed": 7,
            "reasoning_effort": "low",
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "response_format": {"type": "json_object"},
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "lookup",
                        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
                    },
                }
            ],
            "tool_choice": "auto",
            "num_ctx": 4096,
        },
        "scope": {"prompt": "judge-v1#ab12", "judge": "gpt-4o-2024-08-06"},
    }


def _key_of(spec: dict[str, Any]) -> str:
    request = LLMRequest.build(spec["model"], spec["messages"], **spec["params"])
    return cache_key(request, spec["scope"])


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(spec: dict[str, Any]) -> None:
        target = spec
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return change


def _drop(path: tuple[Any, ...]) -> Callable[[dict[str, Any]], None]:
    def change(spec: dict[str, Any]) -> None:
        target = spec
        for part in path[:-1]:
            target = target[part]
        del target[path[-1]]

    return change


PARAMS = list(_base()["params"])
CHANGES: dict[str, Callable[[dict[str, Any]], None]] = {
    "model snapshot": _set(("model",), "openai/gpt-4o-mini-2024-07-18"),
    "model provider": _set(("model",), "azure/gpt-4o-mini"),
    "message role": _set(("messages", 0, "role"), "user"),
    "message content": _set(("messages", 1, "content"), "Is 2 + 2 = 5?"),
    "message content whitespace": _set(("messages", 1, "content"), "Is 2 + 2 = 4? "),
    "message name changed": _set(("messages", 1, "name"), "bob"),
    "message name added": _set(("messages", 0, "name"), "grader"),
    "message name removed": _drop(("messages", 1, "name")),
    "message order": lambda spec: spec["messages"].reverse(),
    "message appended": lambda spec: spec["messages"].append({"role": "assistant", "content": "yes"}),
    "message dropped": lambda spec: spec["messages"].pop(0),
    "temperature": _set(("params", "temperature"), 0.2),
    "max_tokens": _set(("params", "max_tokens"), 257),
    "top_p": _set(("params", "top_p"), 0.9),
    "seed": _set(("params", "seed"), 8),
    "seed type": _set(("params", "seed"), "7"),
    "reasoning_effort": _set(("params", "reasoning_effort"), "high"),
    "thinking budget": _set(("params", "thinking", "budget_tokens"), 2048),
    "thinking type": _set(("params", "thinking", "type"), "disabled"),
    "response_format": _set(("params", "response_format"), {"type": "text"}),
    "tools function name": _set(("params", "tools", 0, "function", "name"), "search"),
    "tools parameter schema": _set(("params", "tools", 0, "function", "parameters", "properties", "q"), {}),
    "tool_choice": _set(("params", "tool_choice"), "required"),
    "provider param num_ctx": _set(("params", "num_ctx"), 8192),
    "param added": _set(("params", "frequency_penalty"), 0.0),
    "provider param added": _set(("params", "keep_alive"), "5m"),
    **{f"param {name} removed": _drop(("params", name)) for name in PARAMS},
    "scope prompt hash": _set(("scope", "prompt"), "judge-v2#cd34"),
    "scope judge identity": _set(("scope", "judge"), "gpt-4o-2024-11-20"),
    "scope removed": _set(("scope",), None),
}


def test_the_base_request_covers_every_parameter_the_brief_names() -> None:
    assert {"temperature", "max_tokens", "top_p", "seed", "reasoning_effort", "thinking", "response_format",
            "tools", "tool_choice", "num_ctx"} <= set(PARAMS)  # fmt: skip


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_changing_any_single_key_component_misses(tmp_path: Path, change: str) -> None:
    cache = ResponseCache(tmp_path)
    base = _base()
    cache.put(_key_of(base), _response())
    changed = copy.deepcopy(base)
    CHANGES[change](changed)
    assert changed != base
    key = _key_of(changed)
    assert key != _key_of(base)
    assert cache.get(key) is None
    assert cache.get(_key_of(_base())) == _response()


def test_all_changed_requests_have_distinct_keys() -> None:
    keys = {_key_of(_base())}
    for change in CHANGES.values():
        spec = _base()
        change(spec)
        keys.add(_key_of(spec))
    assert len(keys) == len(CHANGES) + 1


def _reordered(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reordered(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reordered(v) for v in value]  # list order is meaningful: keep it
    return value


def test_an_identical_request_built_separately_hits(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    base = _base()
    cache.put(_key_of(base), _response("4"))
    twin = _reordered(_base())
    twin["params"]["temperature"] = 0.0
    twin["params"]["top_p"] = 1.0
    assert list(twin["params"]) != list(base["params"]) and list(twin["messages"][1]) != list(base["messages"][1])
    assert _key_of(twin) == _key_of(base)
    assert cache.get(_key_of(twin)) == _response("4")


def test_mutating_the_callers_messages_after_building_keeps_the_key(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    messages = [{"role": "user", "content": "hello", "meta": {"turn": 1}}]
    request = LLMRequest.build("openai/gpt-4o-mini", messages, temperature=0)
    key = cache_key(request, "scope")
    cache.put(key, _response("hi"), request=request)
    messages.append({"role": "assistant", "content": "hi"})
    messages[0]["content"] = "changed"
    messages[0]["meta"]["turn"] = 2
    assert cache_key(request, "scope") == key
    assert cache.get(cache_key(request, "scope")) == _response("hi")


# -- basic behaviour ---------------------------------------------------------------------------------------------


def test_round_trip_miss_then_hit_and_contains_counts_nothing(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = _key(1)
    assert cache.get(key) is None
    assert not cache.contains(key)
    cache.put(key, _response())
    assert cache.contains(key)
    assert cache.get(key) == _response()
    stats = cache.stats()
    assert (stats.entries, stats.hits, stats.misses) == (1, 1, 1)
    assert stats.size_bytes == _entry_path(tmp_path, key).stat().st_size


def test_cached_response_round_trips_and_rejects_bad_fields() -> None:
    response = _response(cost=None)
    assert CachedResponse.from_dict(response.to_dict()) == response
    assert CachedResponse.from_dict({**response.to_dict(), "future_field": 1}) == response
    assert CachedResponse.from_dict({**response.to_dict(), "cost_usd": 1}).cost_usd == 1.0
    with pytest.raises(TypeError):
        CachedResponse.from_dict({**response.to_dict(), "prompt_tokens": True})
    with pytest.raises(TypeError):
        CachedResponse.from_dict({**response.to_dict(), "text": None})
    with pytest.raises(KeyError):
        CachedResponse.from_dict({k: v for k, v in response.to_dict().items() if k != "model"})


def test_a_providers_prompt_cache_count_is_kept_only_when_it_said_one() -> None:
    said = CachedResponse(**{**_response().__dict__, "cached_prompt_tokens": 96})
    assert said.to_dict()["cached_prompt_tokens"] == 96 and CachedResponse.from_dict(said.to_dict()) == said
    # Unsaid, the entry is written as it was before the field existed, and such entries read back as unsaid.
    assert "cached_prompt_tokens" not in _response().to_dict()
    assert CachedResponse.from_dict(_response().to_dict()).cached_prompt_tokens is None
    with pytest.raises(TypeError):
        CachedResponse.from_dict({**said.to_dict(), "cached_prompt_tokens": "96"})


@pytest.mark.parametrize("key", ["../../etc/passwd", "ABCDEF0123456789ABCD", "abc", "", "g" * 64])
def test_keys_that_are_not_hex_digests_are_refused(tmp_path: Path, key: str) -> None:
    cache = ResponseCache(tmp_path)
    with pytest.raises(ValueError, match="cache key"):
        cache.get(key)
    with pytest.raises(ValueError, match="cache key"):
        cache.put(key, _response())


def test_lookups_in_a_missing_directory_create_no_entries(tmp_path: Path) -> None:
    root = tmp_path / "nowhere"
    cache = ResponseCache(root)
    assert cache.get(_key(1)) is None
    assert not (root / "entries").exists()
    stats = cache.stats()
    assert (stats.entries, stats.size_bytes, stats.misses) == (0, 0, 1)
    cache = ResponseCache(tmp_path / "other")
    assert cache.stats().entries == 0 and not (tmp_path / "other").exists()


def test_the_entry_keeps_a_readable_request_summary(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    request = LLMRequest.build("openai/gpt-4o-mini", [{"role": "user", "content": "What did I buy?"}], temperature=0,
                               tools=[{"type": "function"}])  # fmt: skip
    key = cache_key(request, {"judge": "gpt-4o"})
    cache.put(key, _response(), request=request, stage="judge", scope={"judge": "gpt-4o"})
    header, body = _entry_path(tmp_path, key).read_text().split("\n", 1)
    assert header.startswith("om-eval-cache/1 ")
    summary = json.loads(body)["request"]
    assert summary["model"] == "openai/gpt-4o-mini" and summary["stage"] == "judge"
    assert summary["scope"] == {"judge": "gpt-4o"} and summary["params"] == {"temperature": 0, "tools": "<list>"}
    assert summary["last_message"] == "user: What did I buy?"
    assert cache.get(key) == _response()


def test_default_directory_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OM_EVAL_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert ResponseCache().root == tmp_path / "explicit" / "llm"
    monkeypatch.delenv("OM_EVAL_CACHE_DIR")
    assert default_cache_dir() == tmp_path / "xdg" / "om-eval" / "llm"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert ResponseCache().root == tmp_path / "home" / ".cache" / "om-eval" / "llm"


# -- several processes -------------------------------------------------------------------------------------------

WRITERS, PUTS_PER_WRITER, STRIDE = 4, 200, 100  # writer w puts keys w*100 .. w*100+199: neighbours overlap


def _writer(root: str, worker: int, barrier: Any) -> None:
    cache = ResponseCache(root)
    barrier.wait()
    for i in range(PUTS_PER_WRITER):
        index = worker * STRIDE + i
        cache.put(_key(index), _indexed_response(index))
        assert cache.get(_key(index)) == _indexed_response(index)
        other = (index * 7919) % (STRIDE * (WRITERS - 1) + PUTS_PER_WRITER)
        found = cache.get(_key(other))
        assert found is None or found == _indexed_response(other)
    cache.close()


def test_concurrent_writers_lose_nothing_and_corrupt_nothing(tmp_path: Path) -> None:
    barrier = FORK.Barrier(WRITERS)
    workers = [FORK.Process(target=_writer, args=(str(tmp_path), w, barrier)) for w in range(WRITERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0] * WRITERS
    expected = STRIDE * (WRITERS - 1) + PUTS_PER_WRITER
    cache = ResponseCache(tmp_path)
    assert all(cache.get(_key(i)) == _indexed_response(i) for i in range(expected))
    stats = cache.stats()
    assert stats.entries == expected
    assert stats.hits >= WRITERS * PUTS_PER_WRITER + expected
    assert stats.hits + stats.misses == 2 * WRITERS * PUTS_PER_WRITER + expected
    assert not [p for p in (tmp_path / "entries").rglob("*") if p.name.endswith(".tmp")]


# -- killed writers and corrupt files ----------------------------------------------------------------------------

KILL_KEYS = 40


def write_forever(root: str, variant: int) -> None:
    """Child process body for the kill tests: overwrite entries with big payloads until killed."""
    cache = ResponseCache(root, flush_every=1)
    i = 0
    while True:
        index = i % KILL_KEYS
        cache.put(_key(index), _indexed_response(index, variant, size=4000))  # ~70 KB per entry
        if i == 0:
            print("ready", flush=True)  # after a first entry: a slow fsync on a busy machine must not leave none
        cache.get(_key((i * 13) % KILL_KEYS))
        i += 1


def block_in_fsync(root: str) -> None:
    """Child process body: write one entry that already exists and stop inside fsync, before the rename."""
    cache = ResponseCache(root)

    def stuck(fd: int) -> None:
        print("in-fsync", flush=True)
        time.sleep(60)

    os.fsync = stuck
    cache.put(_key(0), _indexed_response(0, variant=99))


def _spawn(call: str) -> subprocess.Popen[str]:
    code = f"from tests.llm.test_cache import *; {call}"
    return subprocess.Popen([sys.executable, "-c", code], cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True)


def _assert_every_entry_valid(root: Path, variants: range) -> int:
    cache = ResponseCache(root)
    served = 0
    for index in range(KILL_KEYS):
        found = cache.get(_key(index))
        if found is not None:
            assert found in [_indexed_response(index, v, size=4000) for v in variants]
            served += 1
    files = [p for p in (root / "entries").rglob("*.json") if not p.name.startswith(".")]
    assert len(files) == served  # every file that looks like an entry is a valid one
    return served


def test_a_writer_killed_at_random_moments_never_leaves_a_corrupt_entry(tmp_path: Path) -> None:
    rounds = range(3)
    for variant in rounds:
        child = _spawn(f"write_forever({str(tmp_path)!r}, {variant})")
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(0.15 + 0.1 * variant)
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        child.stdout.close()
        assert child.returncode == -signal.SIGKILL
        assert _assert_every_entry_valid(tmp_path, rounds) > 0
    ResponseCache(tmp_path).stats()  # counter files written with flush_every=1 are all readable


def test_a_writer_killed_before_its_rename_leaves_the_old_entry(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put(_key(0), _indexed_response(0, variant=1, size=4000))
    child = _spawn(f"block_in_fsync({str(tmp_path)!r})")
    assert child.stdout is not None and child.stdout.readline().strip() == "in-fsync"
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    child.stdout.close()
    leftovers = [p for p in (tmp_path / "entries").rglob("*.tmp")]
    assert len(leftovers) == 1 and leftovers[0].stat().st_size > 0  # the torn write is there, but hidden
    assert cache.get(_key(0)) == _indexed_response(0, variant=1, size=4000)
    assert cache.stats().entries == 1
    assert cache.clear() == 1 and leftovers[0].exists()  # a young temp file may belong to a live writer
    old = time.time() - 3600
    os.utime(leftovers[0], (old, old))
    assert cache.clear() == 0 and not leftovers[0].exists()  # an old one is swept


def _valid_entry(key: str) -> bytes:
    body = json.dumps({"key": key, "response": _response().to_dict()}).encode()
    return b"om-eval-cache/1 " + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def _with_checksum(body: bytes) -> bytes:
    return b"om-eval-cache/1 " + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


CORRUPTIONS: dict[str, Callable[[bytes], bytes]] = {
    "truncated": lambda good: good[: len(good) // 2],
    "truncated by one byte": lambda good: good[:-1],
    "empty": lambda good: b"",
    "garbage": lambda good: bytes(range(256)) * 3,
    "header only": lambda good: good.split(b"\n", 1)[0] + b"\n",
    "no header": lambda good: good.split(b"\n", 1)[1],
    "flipped byte": lambda good: good[:-10] + bytes([good[-10] ^ 1]) + good[-9:],
    "another key's entry": lambda good: _valid_entry(_key(999)),
    "checksummed but not json": lambda good: _with_checksum(b"{not json"),
    "checksummed but not utf-8": lambda good: _with_checksum(b'{"key": "\xff\xfe"}'),
    "checksummed but a list": lambda good: _with_checksum(b"[1, 2]"),
    "checksummed but a field missing": lambda good: _with_checksum(
        json.dumps({"key": _key(1), "response": {"text": "yes"}}).encode()
    ),
}


@pytest.mark.parametrize("corruption", list(CORRUPTIONS), ids=list(CORRUPTIONS))
def test_a_corrupt_file_is_a_miss_and_the_next_put_repairs_it(tmp_path: Path, corruption: str) -> None:
    cache = ResponseCache(tmp_path)
    key = _key(1)
    cache.put(key, _response("original"))
    path = _entry_path(tmp_path, key)
    path.write_bytes(CORRUPTIONS[corruption](path.read_bytes()))
    assert cache.get(key) is None
    assert not cache.contains(key)
    stats = cache.stats()
    assert (stats.hits, stats.misses) == (0, 1)
    cache.put(key, _response("repaired"))
    assert cache.get(key) == _response("repaired")


def test_a_planted_valid_looking_entry_passes_only_with_its_own_key(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    path = _entry_path(tmp_path, _key(5))
    path.parent.mkdir(parents=True)
    path.write_bytes(_valid_entry(_key(5)))
    assert cache.get(_key(5)) == _response()


# -- statistics across objects and processes ---------------------------------------------------------------------


def _lookups(cache: ResponseCache, key: str, n: int) -> None:
    for _ in range(n):
        assert cache.get(key) is not None


def test_stats_persist_across_objects_and_processes(tmp_path: Path) -> None:
    first = ResponseCache(tmp_path)
    first.put(_key(1), _response(cost=0.25))
    first.put(_key(2), _response(cost=None))
    for key in (_key(1), _key(1), _key(2), _key(3)):
        first.get(key)
    first.close()

    second = ResponseCache(tmp_path)
    stats = second.stats()
    assert (stats.entries, stats.hits, stats.misses, stats.hits_unknown_cost) == (2, 3, 1, 1)
    assert stats.dollars_saved == pytest.approx(0.5)
    assert stats.hit_rate == pytest.approx(0.75)

    code = "import sys; from om_eval.llm.cache import ResponseCache; c = ResponseCache(sys.argv[1]); "
    code += f"[c.get({_key(1)!r}) for _ in range(3)]; c.get({_key(4)!r})"  # no close: the exit hook flushes
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, cwd=PROJECT_ROOT)
    stats = ResponseCache(tmp_path).stats()
    assert (stats.hits, stats.misses) == (6, 2)
    assert stats.dollars_saved == pytest.approx(1.25)


def test_a_forked_child_counts_its_own_lookups_once(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put(_key(1), _response(cost=0.5))
    cache.get(_key(1))  # counted but not yet flushed when the fork happens
    child = FORK.Process(target=_lookups, args=(cache, _key(1), 5))  # the child never calls close()
    child.start()
    child.join(30)
    assert child.exitcode == 0
    cache.close()
    stats = ResponseCache(tmp_path).stats()
    assert stats.hits == 6
    assert stats.dollars_saved == pytest.approx(3.0)


def test_clear_removes_entries_and_every_process_stats(tmp_path: Path) -> None:
    old = ResponseCache(tmp_path)
    for index in range(3):
        old.put(_key(index), _response())
    old.get(_key(0))
    old.get(_key(9))
    old.close()

    cleaner = ResponseCache(tmp_path)
    assert cleaner.clear() == 3
    stats = cleaner.stats()
    assert (stats.entries, stats.size_bytes, stats.hits, stats.misses, stats.dollars_saved) == (0, 0, 0, 0, 0.0)
    assert cleaner.get(_key(0)) is None

    old.get(_key(0))  # an object that lived through the clear counts from the clear on
    old.close()
    cleaner.close()
    stats = ResponseCache(tmp_path).stats()
    assert (stats.hits, stats.misses) == (0, 2)
    assert cleaner.clear() == 0


# -- command line ------------------------------------------------------------------------------------------------


def _run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="om-eval")
    add_cache_parser(parser.add_subparsers(dest="command"))
    return run_cache_command(parser.parse_args(["cache", *argv]))


def _filled(root: Path) -> ResponseCache:
    cache = ResponseCache(root)
    cache.put(_key(1), _response(cost=0.125))
    cache.put(_key(2), _response(cost=None))
    cache.get(_key(1))
    cache.get(_key(2))
    cache.get(_key(3))
    cache.close()
    return cache


def test_cli_path_prints_the_root(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    assert _run("path", "--dir", str(tmp_path / "c")) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "c")
    monkeypatch.setenv("OM_EVAL_CACHE_DIR", str(tmp_path / "env"))
    assert _run("path") == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "env" / "llm")


def test_cli_stats_prints_the_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _filled(tmp_path)
    assert _run("stats", "--dir", str(tmp_path)) == 0
    out = capsys.readouterr().out
    for expected in ("entries", "2", "hits", "misses", "hit rate", "66.7%", "dollars saved", "$0.1250",
                     "1 hits of unknown price"):  # fmt: skip
        assert expected in out
    assert _run("stats", "--json", "--dir", str(tmp_path)) == 0
    figures = json.loads(capsys.readouterr().out)
    assert (figures["entries"], figures["hits"], figures["misses"], figures["dollars_saved"]) == (2, 2, 1, 0.125)
    assert figures["root"] == str(tmp_path)


def test_cli_clear_asks_unless_told_yes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    _filled(tmp_path)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    assert _run("clear", "--dir", str(tmp_path)) == 1
    assert ResponseCache(tmp_path).stats().entries == 2
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert _run("clear", "--dir", str(tmp_path)) == 0
    assert ResponseCache(tmp_path).stats().entries == 0
    _filled(tmp_path)
    assert _run("clear", "--yes", "--dir", str(tmp_path)) == 0
    assert "Removed 2 cached responses" in capsys.readouterr().out
    stats = ResponseCache(tmp_path).stats()
    assert (stats.entries, stats.hits, stats.misses) == (0, 0, 0)


def test_cache_modules_import_neither_litellm_nor_rich() -> None:
    code = "import sys, om_eval.llm.cache, om_eval.cli.cache; "
    code += "sys.exit(any(m in sys.modules for m in ('litellm', 'rich')))"
    assert subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT).returncode == 0


def test_discard_removes_one_entry(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put(_key(1), _response("keep"))
    cache.put(_key(2), _response("drop"))
    assert cache.discard(_key(2)) and not cache.discard(_key(2))  # a second discard finds nothing
    assert cache.get(_key(2)) is None and cache.get(_key(1)).text == "keep"  # type: ignore[union-attr]  # entry 1 was just put
    with pytest.raises(ValueError, match="cache key"):
        cache.discard("not-a-key")
