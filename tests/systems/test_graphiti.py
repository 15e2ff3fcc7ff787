"""``memory=graphiti``: Graphiti's own code, offline, through the run's services: a graph of dated facts for every
question, one graph per LoCoMo conversation, nothing paid twice, per-turn prompts recorded, and the offline replies
valid against Graphiti's own schemas."""

from __future__ import annotations

import json
import os
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"  # before Graphiti's first import, which reads it
pytest.importorskip("graphiti_core", reason="the graphiti extra is not installed (pip install 'om-eval[graphiti]')")
pytest.importorskip("kuzu", reason="the graphiti extra is not installed (pip install 'om-eval[graphiti]')")

from graphiti_core.prompts.dedupe_nodes import NodeResolutions
from graphiti_core.prompts.extract_edges import EdgeTimestamps, ExtractedEdges
from graphiti_core.prompts.extract_nodes import ExtractedEntities, SummarizedEntities
from graphiti_core.prompts.lib import prompt_library

from om_eval.memory.completion import response_format_param
from om_eval.systems.graphiti import (
    RERANK_INSTRUCTION,
    GraphitiMemory,
    GraphitiSystem,
    _relevance,
    graphiti_offline_reply,
)
from tests.locomo_shaped import write_locomo_shaped
from tests.runs import run_and_read

pytestmark = pytest.mark.integration  # a library's whole pipeline per question: seconds each

EPISODE = "user: I adopted a cat named Miso last week. We live in Lisbon now.\nassistant: Lovely, congratulations!"


def run(results: Path, *overrides: str, cache: Path | None = None) -> tuple[list[dict[str, Any]], dict[str, int], str]:
    return run_and_read(results, "memory=graphiti", *overrides, cache=cache)


def _shown(item: dict[str, Any]) -> str:
    messages = json.loads(zlib.decompress(item["actor_prompt"]))
    return "\n".join(str(m["content"]) for m in messages)


def test_every_question_is_answered_from_dated_facts_and_a_rerun_pays_nothing(tmp_path: Path) -> None:
    items, fresh, printed = run(tmp_path / "first", "run.concurrency=4")
    assert len(items) == 7 and {i["status"] for i in items} == {"done"}
    details = [json.loads(i["detail"]) for i in items]
    assert all(d["facts"] > 0 and "build_warnings" not in d for d in details)
    assert "build reported warnings" not in printed
    assert fresh["observer"] > 0 and fresh["retrieval"] > 0  # extraction and vectors went through the services
    # Facts carry the session's date (the mini set's sessions are in 2023), never today's.
    facts = [line for i in items for line in _shown(i).splitlines() if line.startswith("- ") and "(since " in line]
    assert facts and all("(since 2023-" in line for line in facts)
    # Every built memory recorded a turn per user message (the per-turn cost table).
    assert all(json.loads(i["turns"])["prompt"] for i in items if not i["reused_memory"])
    again, paid, _ = run(tmp_path / "again", "run.concurrency=1", cache=tmp_path / "first" / "cache")
    assert sum(paid.values()) == 0  # every call of the second run came from the response cache
    # One question at a time or four at once: the same graphs, the same prompts, the same answers.
    assert [(i["question_id"], i["hypothesis"], _shown(i)) for i in again] == \
        [(i["question_id"], i["hypothesis"], _shown(i)) for i in items]


def test_one_graph_per_locomo_conversation(tmp_path: Path) -> None:
    path = write_locomo_shaped(tmp_path, conversations=1, sessions=3)
    items, _, _ = run(tmp_path, "dataset=locomo", f"dataset.path={path}", "dataset.corrections=null")
    assert items and {i["status"] for i in items} == {"done"}
    assert sum(not i["reused_memory"] for i in items) == 1  # built once, shared by the conversation's questions
    assert json.loads(items[0]["detail"])["episodes"] == 3  # one episode per session


def _rendered(name: str, **context: Any) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """A Graphiti prompt as its own library renders it, and the request our client sends for it."""
    class Context(dict[str, Any]):
        def __missing__(self, key: str) -> str:  # the optional parts of a prompt Graphiti fills in itself
            return ""

    group, _, version = name.partition(".")
    messages = getattr(getattr(prompt_library, group), version)(Context(context))
    return [{"role": m.role, "content": m.content} for m in messages], {}


def _reply(messages: list[dict[str, str]], model: Any) -> Any:
    text = graphiti_offline_reply(messages, {"response_format": response_format_param(model)})
    assert text is not None
    return model.model_validate(json.loads(text))


def test_the_offline_replies_are_valid_for_graphitis_own_prompts() -> None:
    base = {"episode_content": EPISODE, "previous_episodes": [], "entity_types": [], "custom_prompt": "",
            "source_description": "conversation session"}
    messages, _ = _rendered("extract_nodes.extract_message", **base)
    entities = _reply(messages, ExtractedEntities).extracted_entities
    names = [e.name for e in entities]
    assert names[0] == "user" and "Miso" in names and "Lisbon" in names and "I" not in names

    reference = "2023-05-20T00:00:00+00:00"
    nodes = [{"id": i, "name": n, "entity_types": ["Entity"]} for i, n in enumerate(names)]
    messages, _ = _rendered("extract_edges.edge", **base, nodes=nodes, reference_time=reference, edge_types=[])
    edges = _reply(messages, ExtractedEdges).edges
    assert {e.target_entity_name for e in edges} >= {"Miso", "Lisbon"}
    assert all(e.source_entity_name == "user" and e.valid_at == reference for e in edges)

    messages, _ = _rendered("extract_edges.extract_timestamps", fact=edges[0].fact, reference_time=reference)
    assert _reply(messages, EdgeTimestamps).valid_at == reference

    messages, _ = _rendered("dedupe_nodes.nodes", **base, extracted_nodes=[{"id": 0, "name": "Miso"},
                                                                            {"id": 1, "name": "Porto"}],
                            existing_nodes=[{"candidate_id": 7, "name": "miso"}])
    resolved = _reply(messages, NodeResolutions).entity_resolutions
    assert [(r.id, r.duplicate_candidate_id) for r in resolved] == [(0, 7), (1, -1)]

    messages, _ = _rendered("extract_nodes.extract_summaries_batch", **base, entities=[{"name": "Miso"}])
    [summary] = _reply(messages, SummarizedEntities).summaries
    assert summary.name == "Miso" and "cat named Miso" in summary.summary


def test_the_offline_reply_answers_graphiti_and_nothing_else() -> None:
    assert graphiti_offline_reply([{"role": "user", "content": "hello"}], {"response_format": None}) is None
    assert graphiti_offline_reply([{"role": "user", "content": "hello"}],
                                  {"response_format": {"type": "json_object"}}) is None


class _Logprobs:
    """Services whose model answers the reranker with a chosen first token and probability."""

    def __init__(self, token: str, probability: float, logprobs: bool = True) -> None:
        import math

        self.token, self.logprob, self.logprobs = token, math.log(probability), logprobs
        self.sent: list[Any] = []

    async def complete(self, messages: Any, **params: Any) -> Any:
        from om_eval.memory.completion import Completion
        from om_eval.om.model import ModelReply

        self.sent.append((messages, params))
        found = ({"token": self.token, "logprob": self.logprob,
                  "top_logprobs": [{"token": self.token, "logprob": self.logprob}]},) if self.logprobs else None
        return Completion(ModelReply(self.token, "m", logprobs=found))


@pytest.mark.parametrize(("token", "probability", "logprobs", "score"), [
    ("True", 0.8, True, 0.8), ("False", 0.8, True, 0.2), ("True", 1.0, False, 1.0), ("False", 1.0, False, 0.0)])
def test_the_reranker_scores_by_the_first_tokens_probability(token: str, probability: float, logprobs: bool,
                                                             score: float) -> None:
    import asyncio

    services = _Logprobs(token, probability, logprobs)
    assert asyncio.run(_relevance(services, "where do I live?", "user lives in Lisbon")) == pytest.approx(score)
    [(messages, params)] = services.sent
    assert messages[0]["content"] == RERANK_INSTRUCTION
    assert params["logprobs"] is True and params["max_tokens"] == 1


def test_the_offline_reranker_says_true_on_shared_words() -> None:
    def ask(query: str, passage: str) -> str | None:
        return graphiti_offline_reply([{"role": "system", "content": RERANK_INSTRUCTION},
                                       {"role": "user", "content": f"Query: {query}\n\nPassage: {passage}"}], {})

    assert ask("where does the user live?", "The user lives in Lisbon") == "True"
    assert ask("which cat?", "The user lives in Lisbon") == "False"


def test_bad_options_are_named() -> None:
    with pytest.raises(ValueError, match=r"memory\.edges=-1"):
        GraphitiSystem({"edges": -1})
    with pytest.raises(ValueError, match=r"memory\.reranker='bm25'.*rrf, mmr, cross_encoder"):
        GraphitiSystem({"reranker": "bm25"})
    with pytest.raises(ValueError, match="would show the actor nothing"):
        GraphitiSystem({"edges": 0, "nodes": 0})


def test_an_empty_graph_is_reported() -> None:
    system = GraphitiSystem()
    assert system.build_warnings(GraphitiMemory(None, episodes=3, entities=0, facts=0)) == [
        "0 facts extracted", "0 entities extracted"]
    assert system.build_warnings(GraphitiMemory(None, episodes=3, entities=2, facts=1)) == []


def test_the_context_shows_the_dates_facts_held_never_graphitis_clock() -> None:
    from types import SimpleNamespace

    from om_eval.systems.graphiti import _shown

    start, end = datetime(2023, 5, 20, tzinfo=UTC), datetime(2023, 7, 1, tzinfo=UTC)
    edges = [SimpleNamespace(fact="user lives in Lisbon", valid_at=start, invalid_at=end, created_at=datetime.now(UTC)),
             SimpleNamespace(fact="user has a cat", valid_at=None, invalid_at=None, created_at=datetime.now(UTC))]
    nodes = [SimpleNamespace(name="Miso", summary="The user's\ncat.")]
    assert _shown(edges, nodes).splitlines() == [
        "Facts, with the dates they held:", "- user lives in Lisbon (from 2023-05-20 until 2023-07-01)",
        "- user has a cat (since date unknown)", "Entities:", "- Miso: The user's cat."]


def test_a_closed_graph_frees_its_database() -> None:
    import asyncio

    from om_eval.systems.graphiti import _close_graph, _new_graph

    async def made() -> Any:
        return _new_graph(8)

    graph = asyncio.run(made())
    import kuzu

    kuzu.Connection(graph.driver.db).execute("RETURN 1")  # open: it answers
    _close_graph(graph)
    with pytest.raises(RuntimeError):
        kuzu.Connection(graph.driver.db)


def test_a_query_kuzu_answers_after_a_cancellation_stops_the_question(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from graphiti_core.driver.kuzu_driver import KuzuDriver

    from om_eval.systems.graphiti import _serial_driver

    async def swallowing(self: Any, query: str, **kwargs: Any) -> Any:
        current = asyncio.current_task()
        assert current is not None
        current.cancel()  # Ctrl-C while Kuzu ran the query: it gives back no result instead of raising
        return [], None, None

    monkeypatch.setattr(KuzuDriver, "execute_query", swallowing)

    seen: list[str] = []

    async def ask() -> None:
        driver = _serial_driver(KuzuDriver)(db=":memory:")
        try:
            await driver.execute_query("RETURN 1")
            seen.append("went on with an empty result")
        except asyncio.CancelledError:
            seen.append("stopped")
            raise

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(ask())
    assert seen == ["stopped"]
