"""The services a real library needs: JSON mode and schemas, sampling and output settings, tools and log
probabilities passed through the run's client into the cache key; a reply with more than text; a synchronous
library bridged on a pool of its own; the embedding model's size."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from om_eval.llm import LLMClient
from om_eval.llm.cache import ResponseCache
from om_eval.llm.stand_in import register_responder, registered_responders, unregister_responder
from om_eval.memory.bridge import current_services, run_sync
from om_eval.memory.completion import Completion, response_format_param
from om_eval.memory.services import HarnessServices
from om_eval.om.config import ModelSettings
from om_eval.om.tokens import make_counter
from om_eval.testing.scripted.structured import schema_instance

SCRIPTED = ModelSettings(model="scripted/om-eval", temperature=0.0)
ASKED = [{"role": "system", "content": "Extract facts."}, {"role": "user", "content": "Alice moved to Paris in May"}]


class Fact(BaseModel):
    subject: str
    year: int
    tags: list[str]


class Facts(BaseModel):
    facts: list[Fact]
    confident: bool


def services(tmp_path: Path, **kwargs: Any) -> tuple[HarnessServices, LLMClient]:
    client = LLMClient(cache=ResponseCache(tmp_path / "cache"))
    return HarnessServices(client, SCRIPTED, make_counter("tiktoken"), embedder=ModelSettings(
        model="scripted/om-eval"), system="probe", **kwargs), client


def test_a_pydantic_schema_is_answered_with_json_its_model_accepts_and_cached(tmp_path: Path) -> None:
    lent, client = services(tmp_path)
    reply = asyncio.run(lent.complete(ASKED, response_format=Facts, max_tokens=200, seed=7))
    parsed = Facts.model_validate_json(reply)  # the library's own validator
    assert parsed.facts and parsed.facts[0].subject == "Alice moved to Paris in May"
    assert isinstance(reply, str) and reply.text == str(reply) and reply.finish_reason == "stop" and not reply.cached
    again = asyncio.run(lent.complete(ASKED, response_format=Facts, max_tokens=200, seed=7))
    assert again == reply and again.cached  # the same request: served from the cache
    other = asyncio.run(lent.complete(ASKED, response_format=Facts, max_tokens=199, seed=7))
    assert not other.cached  # the output cap is part of the request, so of its key
    assert [(r.stage, r.cached) for r in client.ledger.records] == [("observer", False), ("observer", True),
                                                                    ("observer", False)]


def test_json_mode_without_a_schema_gets_valid_json_and_a_systems_responder_comes_first(tmp_path: Path) -> None:
    lent, _ = services(tmp_path)
    assert json.loads(asyncio.run(lent.complete(ASKED, response_format="json_object"))) == {}
    seen: list[Any] = []

    def responder(messages: Any, request: Any) -> str | None:
        seen.append(request)
        return '{"memory": [{"id": "0", "text": "Alice moved to Paris"}]}' if "Extract" in messages[0]["content"] \
            else None

    register_responder("probe-test", responder)
    try:
        reply = asyncio.run(lent.complete([*ASKED[:1], {"role": "user", "content": "again"}],
                                          response_format="json_object"))
        assert json.loads(reply)["memory"][0]["text"] == "Alice moved to Paris"
        assert seen[-1] == {"response_format": {"type": "json_object"}, "tools": None}
    finally:  # the registry is process-wide: leave it as found
        unregister_responder("probe-test")
    assert responder not in registered_responders()


def test_log_probabilities_come_back_and_survive_the_cache(tmp_path: Path) -> None:
    lent, _ = services(tmp_path)
    reply = asyncio.run(lent.complete(ASKED, logprobs=True, top_logprobs=3))
    assert reply.logprobs and all(set(t) >= {"token", "logprob", "top_logprobs"} for t in reply.logprobs)
    assert len(reply.logprobs[0]["top_logprobs"]) == 3
    cached = asyncio.run(lent.complete(ASKED, logprobs=True, top_logprobs=3))
    assert cached.cached and cached.logprobs == reply.logprobs
    assert asyncio.run(lent.complete(ASKED)).logprobs is None  # not asked for: none, and another cache entry


def test_response_formats_are_named_and_bad_ones_refused() -> None:
    assert response_format_param(None) is None
    assert response_format_param({"type": "json_object"}) == {"type": "json_object"}
    wrapped = response_format_param(Fact)
    assert wrapped is not None and wrapped["json_schema"]["name"] == "Fact" and wrapped["json_schema"]["strict"]
    with pytest.raises(TypeError, match="pydantic model class"):
        response_format_param(42)


def test_schema_instances_follow_refs_enums_and_bounds() -> None:
    schema = {"$defs": {"Kind": {"enum": ["person", "place"]}},
              "type": "object", "required": ["kind", "n", "when", "maybe"],
              "properties": {"kind": {"$ref": "#/$defs/Kind"}, "n": {"type": "integer", "minimum": 3},
                             "when": {"type": "string", "format": "date-time"},
                             "maybe": {"anyOf": [{"type": "null"}, {"type": "number"}]},
                             "short": {"type": "string", "maxLength": 4}}}
    assert schema_instance(schema, "a b c") == {"kind": "person", "n": 3, "when": "2023-05-20T00:00:00Z",
                                                "maybe": 0.0, "short": "a b "}


class _Library:
    """A synchronous library: blocks on its model calls, as mem0 does."""

    def __init__(self) -> None:
        self.threads: set[str] = set()

    def add(self, text: str) -> str:
        self.threads.add(threading.current_thread().name)
        time.sleep(0.01)  # blocking work the loop must not wait on
        return current_services().complete([{"role": "user", "content": text}]).text


def test_a_sync_library_runs_on_its_own_pool_with_this_questions_services(tmp_path: Path) -> None:
    lent, client = services(tmp_path)
    library = _Library()

    async def main() -> list[str]:
        return list(await asyncio.gather(*(run_sync(lent, library.add, f"Alice said {i}") for i in range(6))))

    replies = asyncio.run(main())
    assert len(replies) == 6 and all(replies)
    assert library.threads and all(name.startswith("om-eval-library") for name in library.threads)
    assert len(client.ledger.records) == 6 and {r.stage for r in client.ledger.records} == {"observer"}


def test_a_blocking_twin_on_the_loops_thread_is_refused_not_hung(tmp_path: Path) -> None:
    lent, _ = services(tmp_path)

    async def main() -> None:
        twins = None

        def grab() -> Any:
            return current_services()

        twins = await run_sync(lent, grab)
        twins.complete([{"role": "user", "content": "x"}])  # now on the loop's thread

    with pytest.raises(RuntimeError, match="event loop's own thread"):
        asyncio.run(main())
    with pytest.raises(RuntimeError, match="only available inside run_sync"):
        current_services()


def test_a_library_past_its_timeout_is_named_and_its_later_calls_refused(tmp_path: Path) -> None:
    lent, _ = services(tmp_path)
    refused: list[str] = []

    def slow() -> None:
        time.sleep(0.3)
        try:
            current_services().complete([{"role": "user", "content": "late"}])
        except RuntimeError as error:
            refused.append(str(error))

    async def main() -> None:
        with pytest.raises(TimeoutError, match="memory=probe: the library call .*slow.* 0.05 s"):
            await lent.run_sync(slow, timeout=0.05)
        await asyncio.sleep(0.5)

    asyncio.run(main())
    assert refused and "after its library call ran past the 0.05 s timeout" in refused[0]


def test_the_embedding_size_is_asked_once_and_the_input_limit_read_from_litellms_list(tmp_path: Path) -> None:
    from om_eval.llm.models import embedding_limits

    lent, client = services(tmp_path)
    info = asyncio.run(lent.embedding_info())
    assert info.dimensions == len(asyncio.run(lent.embed(["x"]))[0]) and info.max_input_tokens is None
    asyncio.run(lent.embedding_info())
    assert [r.cached for r in client.ledger.records if r.stage == "retrieval"][-1]  # the probe again: from the cache
    assert embedding_limits("openai/text-embedding-3-small") == (1536, 8191)


def test_completion_is_a_str_with_the_replys_fields() -> None:
    from om_eval.om.model import ModelReply

    reply = Completion(ModelReply("yes", "m", 3, 1, finish_reason="length"))
    assert reply == "yes" and reply.upper() == "YES" and reply.cut_off and reply.prompt_tokens == 3


LIBRARY = {"json_library": "tests.memory.probes:JsonLibrary"}


@pytest.fixture
def with_library(monkeypatch: pytest.MonkeyPatch) -> None:
    from om_eval.memory import registry

    monkeypatch.setattr(registry, "plugin_targets", lambda: dict(LIBRARY))


def _run(tmp_path: Path, *overrides: str) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    import io

    import duckdb
    from rich.console import Console

    from om_eval.experiment.app import run_from_config
    from tests.runs import compose_run

    output = io.StringIO()
    run_from_config(compose_run(tmp_path, "memory=json_library", *overrides),  # a later memory= wins
                    console=Console(file=output, width=200))
    [store] = (tmp_path / "store").glob("*.duckdb")
    with duckdb.connect(str(store), read_only=True) as con:
        cursor = con.execute("SELECT * FROM items ORDER BY question_id")
        items = [dict(zip([d[0] for d in cursor.description], row)) for row in cursor.fetchall()]
        packages = json.loads(con.execute("SELECT packages FROM runs").fetchone()[0])
    return items, packages, output.getvalue()


def test_a_sync_library_plugin_runs_offline_through_its_responder_and_is_recorded(
        tmp_path: Path, with_library: None) -> None:
    items, packages, printed = _run(tmp_path)
    assert len(items) == 7 and {i["status"] for i in items} == {"done"}
    # Its responder answered every extraction (the scripted model's own JSON would carry no "facts" key).
    assert all(json.loads(i["detail"])["facts"] > 0 for i in items)
    assert not any("build_warnings" in json.loads(i["detail"]) for i in items)
    assert "build reported warnings" not in printed
    assert packages["pydantic"] is not None  # the library it names is recorded with the run


def test_a_build_that_stores_nothing_is_loud(tmp_path: Path, with_library: None) -> None:
    items, _, printed = _run(tmp_path, "memory.extract=false")
    assert {i["status"] for i in items} == {"done"}
    assert all(json.loads(i["detail"])["build_warnings"] == ["0 facts stored"] for i in items)
    assert "7 questions answered from a memory whose build reported warnings" in printed
    assert "7 x 0 facts stored" in printed


@pytest.mark.parametrize("system", ["json_library", "async_json_library"])
def test_a_library_answers_the_same_at_any_concurrency(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       system: str) -> None:
    from om_eval.memory import registry

    monkeypatch.setattr(registry, "plugin_targets", lambda: {
        "json_library": "tests.memory.probes:JsonLibrary",
        "async_json_library": "tests.memory.probes:AsyncJsonLibrary"})
    seen = {}
    for concurrency in (1, 4):
        items, _, _ = _run(tmp_path / str(concurrency), f"memory={system}", f"run.concurrency={concurrency}")
        seen[concurrency] = [(i["question_id"], i["hypothesis"], i["label"], i["detail"], i["context_tokens"])
                             for i in items]
    assert seen[1] == seen[4] and len(seen[1]) == 7


def test_a_librarys_own_timeout_is_its_own_error(tmp_path: Path) -> None:
    lent, _ = services(tmp_path)

    def times_out() -> None:
        raise TimeoutError("socket read timed out")

    for limit in (None, 30.0):  # no run_sync deadline, and one far away: the library's error as it raised it
        with pytest.raises(TimeoutError, match="^socket read timed out$"):
            asyncio.run(lent.run_sync(times_out, timeout=limit))


def test_a_completion_survives_copy_deepcopy_and_pickle() -> None:
    import copy
    import pickle

    from om_eval.om.model import ModelReply

    reply = Completion(ModelReply("{}", "m", 3, 1, finish_reason="length", logprobs=({"token": "{}", "logprob": 0.0},)))
    for again in (copy.copy(reply), copy.deepcopy(reply), pickle.loads(pickle.dumps(reply))):
        assert isinstance(again, Completion) and again == "{}" and again.cut_off and again.logprobs == reply.logprobs


@pytest.mark.parametrize(("dataset", "memories"), [((), 7), (("dataset=locomo",), 2)])
def test_every_memory_is_closed_once_after_its_last_question_and_its_scratch_folder_removed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dataset: tuple[str, ...], memories: int) -> None:
    from om_eval.memory import registry
    from tests.locomo_shaped import write_locomo_shaped
    from tests.memory import probes

    monkeypatch.setattr(registry, "plugin_targets", lambda: {"folder_library": "tests.memory.probes:FolderLibrary"})
    monkeypatch.setattr(probes, "CLOSED", [])
    extra = [*dataset, f"dataset.path={write_locomo_shaped(tmp_path)}", "dataset.corrections=null"] if dataset else []
    items, _, _ = _run(tmp_path / "results", "memory=folder_library", "run.concurrency=3", *extra)
    assert items and {i["status"] for i in items} == {"done"}  # every answer read its memory's file
    closed = probes.CLOSED
    assert len(closed) == memories and len({path for path, _ in closed}) == memories
    assert all(there for _, there in closed)  # closed before its folder was removed
    assert all("/scratch/" in path for path, _ in closed)
    assert not (tmp_path / "results" / "scratch").exists() or not any((tmp_path / "results" / "scratch").rglob("*"))


def test_the_small_role_calls_models_small_when_set_and_the_observer_otherwise(tmp_path: Path) -> None:
    from om_eval.llm.providers import register_scripted
    from om_eval.testing.scripted import ScriptedModel

    small = ModelSettings(model=register_scripted("small-one", ScriptedModel()))
    lent, client = services(tmp_path / "set", small=small)
    asyncio.run(lent.complete(ASKED, role="small"))
    asyncio.run(lent.complete(ASKED))
    assert [r.model for r in client.ledger.records] == ["scripted/small-one", SCRIPTED.model]
    unset, client = services(tmp_path / "unset")
    asyncio.run(unset.complete(ASKED, role="small"))
    assert [r.model for r in client.ledger.records] == [SCRIPTED.model]
    with pytest.raises(ValueError, match=r"role='tiny'.*'observer'.*'small'"):
        asyncio.run(lent.complete(ASKED, role="tiny"))


def test_a_close_that_fails_is_a_warning_and_loses_no_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from om_eval.memory import registry
    from tests.memory import probes

    monkeypatch.setattr(registry, "plugin_targets", lambda: {"failing_close": "tests.memory.probes:FailingClose"})
    monkeypatch.setattr(probes, "CLOSED", [])
    with pytest.warns(RuntimeWarning, match=r"memory=failing_close: closing the memory .* failed \(RuntimeError"):
        items, _, _ = _run(tmp_path / "results", "memory=failing_close")
    assert len(items) == 7 and {i["status"] for i in items} == {"done"}
    assert len(probes.CLOSED) == 7  # every memory was asked, each once
    assert not any((tmp_path / "results" / "scratch").rglob("*"))  # and its folder removed all the same
