"""The seam's contract, as a plugin meets it: every optional hook declared once with its default, a plain class
still a system, the gold out of reach, a ranking or a memory the system cannot have made refused per question."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest

from om_eval.experiment.app import run_from_config
from om_eval.memory import registry
from om_eval.memory.registry import DeclaredSystem, make_system
from om_eval.memory.system import HOOKS, MemorySystemBase, PinnedIdentity
from om_eval.om.config import ConfigError
from tests.memory import probes
from tests.runs import compose_run

PROBES = {name: f"tests.memory.probes:{cls}" for name, cls in
          (("gold_probe", "GoldProbe"), ("ranker", "Ranker"), ("appending", "Appending"),
           ("silent_embedder", "SilentEmbedder"), ("elsewhere", "ElsewhereOptions"))}


@pytest.fixture
def with_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "plugin_targets", lambda: dict(PROBES))


def _items(results: Path) -> list[dict[str, Any]]:
    [store] = (results / "store").glob("*.duckdb")
    with duckdb.connect(str(store), read_only=True) as con:
        cursor = con.execute("SELECT * FROM items ORDER BY question_id")
        return [dict(zip([d[0] for d in cursor.description], row)) for row in cursor.fetchall()]


def test_every_hook_is_declared_on_the_base_with_its_default() -> None:
    assert set(HOOKS) <= set(vars(MemorySystemBase))
    base = MemorySystemBase()
    assert (base.uses_observer_model, base.uses_embedding_model, base.max_output_tokens) == (True, False, None)
    assert dict(base.default_options) == {} and base.prepare() is None
    assert base.memory_digest({"a": [1]}) == base.memory_digest({"a": [1]}) != base.memory_digest({"a": [2]})


def test_a_plain_class_is_seen_through_the_base_with_the_hooks_it_declares(with_probes: None) -> None:
    system = make_system("gold_probe", {})
    assert isinstance(system, DeclaredSystem) and system.name == "gold_probe"
    assert (system.uses_observer_model, system.uses_embedding_model, system.max_output_tokens) == (False, False, None)
    assert registry.plugin_defaults("ranker") == {"mode": "sessions"}
    assert isinstance(make_system("ranker", {}), probes.Ranker)  # a subclass is used as it is


def test_what_a_system_is_is_read_from_its_class_and_defaults_for_a_plugin(with_probes: None) -> None:
    names = [*registry.BUILT_IN, "gold_probe", "uninstalled_plugin"]  # "elsewhere" claims a group: see below
    groups = {name: registry.system_trait(name, "options_group") for name in names}
    assert groups == {**dict.fromkeys(names, "memory"), "om": "om", "full_context": "baseline", "oracle": "baseline"}
    assert [name for name in names if registry.system_trait(name, "reads_history")] == ["full_context", "oracle"]
    assert [name for name in names if not registry.system_trait(name, "records_turns")] == [
        "oracle", "gold_probe", "uninstalled_plugin"]
    assert "evidence sessions" in registry.system_trait("oracle", "no_turns_reason")
    assert registry.system_trait("elsewhere", "options_group") == "om"
    assert registry.system_trait("uninstalled_plugin", "no_turns_reason") == ""


def test_a_plugin_claiming_options_outside_its_memory_group_is_refused(with_probes: None) -> None:
    from om_eval.experiment.spec import _memory_choice
    from om_eval.om.config import ConfigError

    with pytest.raises(ConfigError, match="memory=elsewhere declares options_group='om'.*remove options_group"):
        _memory_choice({"memory": {"system": "elsewhere"}, "models": {"actor": {}, "judge": {}}})


@pytest.mark.parametrize("name", ["simple_om", "rag_mastra", "rag_lme"])
def test_the_built_in_systems_subclass_the_base(name: str) -> None:
    assert isinstance(make_system(name, {}), MemorySystemBase)


def test_a_plugin_looking_for_the_gold_finds_nothing_and_answers_every_question(with_probes: None,
                                                                                 tmp_path: Path) -> None:
    run_from_config(compose_run(tmp_path, "memory=gold_probe"))
    items = _items(tmp_path)
    assert len(items) == 7 and {i["status"] for i in items} == {"done"}, [i["error"] for i in items]


def test_a_ranking_of_history_ids_gets_recall_without_computing_it(with_probes: None, tmp_path: Path) -> None:
    run_from_config(compose_run(tmp_path, "memory=ranker"))
    items = _items(tmp_path)
    assert {i["status"] for i in items} == {"done"}
    records = [json.loads(i["retrieval"]) for i in items if not i["is_abstention"]]
    assert records and all(r["k"] == 2 and "recall_any@3" in r["metrics"] for r in records if r["correct"])
    assert any(r["correct"] for r in records)


@pytest.mark.parametrize(("mode", "message"), [
    ("bogus", "memory=ranker ranked or searched 'not-a-session', which name no turn or session"),
    ("repeated", r"memory=ranker ranked '[^']+' more than once"),
])
def test_a_ranking_the_system_cannot_have_made_is_an_error_never_a_score(with_probes: None, tmp_path: Path,
                                                                         mode: str, message: str) -> None:
    run_from_config(compose_run(tmp_path, "memory=ranker", f"memory.mode={mode}"))
    items = _items(tmp_path)
    assert {i["status"] for i in items} == {"error"}
    assert all(re.search(message, i["error"]) and i["label"] is None for i in items), items[0]["error"]


def test_a_memory_changed_while_answering_is_an_error_on_that_question(with_probes: None, tmp_path: Path) -> None:
    run_from_config(compose_run(tmp_path, "memory=appending"))
    items = _items(tmp_path)
    assert {i["status"] for i in items} == {"error"}
    assert all("memory=appending changed its memory while answering" in i["error"] for i in items)


def test_embedding_without_declaring_it_names_the_hook(with_probes: None, tmp_path: Path) -> None:
    run_from_config(compose_run(tmp_path, "memory=silent_embedder"))
    items = _items(tmp_path)
    assert {i["status"] for i in items} == {"error"}
    assert "calls services.embed, but does not say it embeds: set uses_embedding_model = True" in items[0]["error"]


def test_the_probe_itself_would_see_the_gold_of_a_question() -> None:
    from tests.systems.helpers import question, session

    raw = question(session(0, "answer_a", ("user", "I moved to Lisbon.", True)))
    assert "answer" in probes.gold_found(raw)  # the probe can fail: the views are what hide the gold
    with pytest.raises(AssertionError, match="exposes"):
        asyncio.run(probes.GoldProbe({}).ingest(raw, None))


class Misnamed:
    """A plain plugin whose name is not the one it is registered under."""

    name = "someone_else"

    def __init__(self, options: object) -> None:
        pass

    def identity(self) -> dict:
        return {}

    def budget(self) -> dict:
        return {}

    async def ingest(self, history: object, services: object) -> None:
        return None

    async def context(self, memory: object, question: object, services: object) -> str:
        return ""


class SharedSnapshots(Misnamed):
    """Snapshots under one pinned key for every history: a second history would restore the first one's memory."""

    name = "shared_snapshots"

    def pinned_identity(self) -> PinnedIdentity:
        return PinnedIdentity({}, {}, "shared:key", per_history=False)

    def snapshot(self, memory: object) -> dict:
        return {}

    async def restore(self, data: object, services: object) -> None:
        return None


@pytest.mark.parametrize(("name", "target", "message"), [
    ("misnamed", "tests.memory.test_contract:Misnamed", "calls itself 'someone_else'; set name = 'misnamed'"),
    ("shared_snapshots", "tests.memory.test_contract:SharedSnapshots", r"per_history is False"),
])
def test_a_plugin_that_would_mislabel_or_share_memories_is_refused(
        monkeypatch: pytest.MonkeyPatch, name: str, target: str, message: str) -> None:
    monkeypatch.setattr(registry, "plugin_targets", lambda: {name: target})
    with pytest.raises(ConfigError, match=message):
        make_system(name, {})
