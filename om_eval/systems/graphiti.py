"""``memory=graphiti``: Graphiti (``graphiti-core``, the ``graphiti`` extra), the open-source engine of Zep, as a
memory system.

Graphiti's own code builds a temporal knowledge graph (entities, and facts between them with the dates they held)
and searches it; om-eval supplies what a fair comparison needs around it:

* **Its models are the run's.** Graphiti's LLM, embedder and reranker are replaced by clients that call this
  question's services: extraction by ``models.observer`` with the schema Graphiti asks for (both of its model
  sizes), vectors by ``models.embedding``, and the cross-encoder by ``models.observer`` with log probabilities (as
  Graphiti's OpenAI reranker scores a passage). Graphiti is asynchronous, so it runs on the harness's loop; the
  clients find the running question's services through a context variable, because a LoCoMo graph is shared by
  questions that each have their own.
* **Nothing is shared or left behind.** One in-process Kuzu database per history (``:memory:``), with the full-text
  indexes Graphiti's Kuzu driver leaves uncreated; telemetry is off.
* **Its clock is the history's.** Each session is one episode whose ``reference_time`` is the session's date, so
  facts are dated as the conversation was. The context shows only those dates, never the wall-clock times Graphiti
  stamps on what it creates.

The question is answered from one ``search_`` over facts and entities (BM25 and cosine similarity, fused by the
``reranker`` option, breadth-first search added for the cross-encoder as Graphiti's own recipe does): the top
``edges`` facts with the dates they held and the top ``nodes`` entities with their summaries.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import hashlib
import importlib
import json
import logging
import math
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

from om_eval.memory.system import MemoryContext, MemorySystemBase
from om_eval.memory.view import HistoryView, QuestionView
from om_eval.om.config import ConfigError
from om_eval.systems.library_turns import SearchedTurns, fit_to_limit, installed_version, warn_unpinned

__all__ = ["GraphitiMemory", "GraphitiSystem", "graphiti_offline_reply"]

#: The graphiti-core release the adapter is written against (the ``graphiti`` extra pins it).
PINNED = "0.31.1"
RERANKERS = ("rrf", "mmr", "cross_encoder")
#: The services of the question whose Graphiti call is running (see the module docstring).
_SERVICES: contextvars.ContextVar[Any] = contextvars.ContextVar("om_eval_graphiti_services", default=None)
#: The reranker's instruction (ours): it answers one word, whose probability scores the passage.
RERANK_INSTRUCTION = ("Decide whether the passage below helps answer the query. Reply with exactly one word: True "
                      "if it does, False if it does not.")
_UNDATED = "date unknown"


def _require_graphiti() -> None:
    """Import Graphiti (telemetry off before its first import, which reads it); a missing extra is named with its
    install command, whenever it is asked.

    Raises:
        ConfigError: Graphiti or its Kuzu driver cannot be imported.
    """
    os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
    try:
        with warnings.catch_warnings():  # pydantic's deprecation notes about Graphiti's own models, at import
            warnings.simplefilter("ignore", DeprecationWarning)
            for module in ("graphiti_core.graphiti", "graphiti_core.search.search"):
                importlib.import_module(module)  # once: later imports read sys.modules
        import kuzu  # noqa: F401
    except ImportError as error:
        raise ConfigError(f"memory=graphiti needs the graphiti extra ({error}): pip install 'om-eval[graphiti]'",
                          option="memory") from None


@functools.cache
def _clients() -> tuple[type, type, type]:
    """Graphiti's LLM, embedder and cross-encoder clients, answered by the running question's services; made once,
    on first use (their bases are Graphiti's, an optional import)."""
    _require_graphiti()
    from graphiti_core.cross_encoder.client import CrossEncoderClient
    from graphiti_core.embedder.client import EmbedderClient
    from graphiti_core.llm_client.client import LLMClient

    # Graphiti logs every dangling edge it repairs and every summary for an entity it did not ask about.
    logging.getLogger("graphiti_core").setLevel(logging.ERROR)

    class LLMHook(LLMClient):  # type: ignore[misc,unused-ignore]  # Any without the extra
        async def _generate_response(self, messages: Any, response_model: Any = None, max_tokens: int = 0,
                                     model_size: Any = None, *, model: str | None = None) -> dict[str, Any]:
            # Graphiti's max_tokens is its own ceiling (16k), not a budget: the run's model settings cap the reply.
            sent = [{"role": m.role, "content": m.content} for m in messages]
            role = "small" if getattr(model_size, "value", model_size) == "small" else "observer"
            reply = await _services().complete(sent, response_format=response_model or "json_object", role=role)
            return _parsed(reply, response_model)

    class EmbedderHook(EmbedderClient):  # type: ignore[misc,unused-ignore]
        async def create(self, input_data: Any) -> list[float]:
            text = input_data if isinstance(input_data, str) else " ".join(map(str, input_data))
            vectors: list[list[float]] = await _services().embed([text])
            return vectors[0]

        async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
            vectors: list[list[float]] = await _services().embed(list(input_data_list))
            return vectors

    class RerankerHook(CrossEncoderClient):  # type: ignore[misc,unused-ignore]
        async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
            services = _services()
            scores = await asyncio.gather(*(_relevance(services, query, passage) for passage in passages))
            return sorted(zip(passages, scores, strict=True), key=lambda pair: -pair[1])

    return LLMHook, EmbedderHook, RerankerHook


def _services() -> Any:
    services = _SERVICES.get()
    if services is None:
        raise RuntimeError("a Graphiti client was called outside memory=graphiti's ingest or context: its calls "
                           "would land in no question's ledger")
    return services


def _parsed(reply: Any, response_model: Any) -> dict[str, Any]:
    """The reply's JSON object, checked against Graphiti's schema when it gave one.

    Raises:
        ValueError: the reply is not a JSON object of that schema (named, with the start of the reply).
    """
    text = str(reply).strip()
    if text.startswith("```"):  # a fenced reply from a model without JSON mode
        text = text.strip("`").removeprefix("json").strip()
    try:
        data: dict[str, Any] = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        if response_model is not None:
            data = response_model.model_validate(data).model_dump()
    except ValueError as error:
        name = getattr(response_model, "__name__", "a JSON object")
        raise ValueError(f"memory=graphiti: the model's reply is not {name} ({str(error).splitlines()[0]}); it "
                         f"began {text[:120]!r}") from None
    return data


async def _relevance(services: Any, query: str, passage: str) -> float:
    """How likely the model says ``passage`` helps answer ``query``: the probability of its first token when that
    is "True", one minus it otherwise (Graphiti's reranker rule); a reply without log probabilities scores 1 or 0
    by its word."""
    reply = await services.complete(
        [{"role": "system", "content": RERANK_INSTRUCTION},
         {"role": "user", "content": f"Query: {query}\n\nPassage: {passage}"}],
        max_tokens=1, temperature=0, logprobs=True, top_logprobs=2)
    if not reply.logprobs:
        return 1.0 if str(reply).strip().lower().startswith("true") else 0.0
    first = reply.logprobs[0]
    top = (first.get("top_logprobs") or [first])[0]
    probability = math.exp(float(top.get("logprob", 0.0)))
    return probability if str(top.get("token", "")).strip().lower().startswith("true") else 1 - probability


@dataclass
class GraphitiMemory:
    """One history's Graphiti graph, with what its build made."""

    graph: Any = field(repr=False)
    episodes: int
    entities: int
    facts: int


class GraphitiSystem(MemorySystemBase):
    """Graphiti's temporal knowledge graph behind the seam (see the module docstring)."""

    name = "graphiti"
    records_turns = True
    uses_observer_model = True
    uses_embedding_model = True
    uses_small_model = True
    packages = ("graphiti-core", "kuzu")
    about = ("Graphiti, Zep's open-source engine (the facts its search returns, with the dates they held, and entity "
             "summaries)")
    default_options: ClassVar[Mapping[str, Any]] = {"edges": 20, "nodes": 20, "reranker": "rrf"}

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        super().__init__({**self.default_options, **(options or {})})
        for option in ("edges", "nodes"):
            value = self.options[option]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"memory.{option}={value!r} is invalid: a number of results >= 0")
        if self.options["edges"] + self.options["nodes"] == 0:
            raise ValueError("memory.edges=0 and memory.nodes=0 would show the actor nothing: give one of them >= 1")
        if self.options["reranker"] not in RERANKERS:
            raise ValueError(f"memory.reranker={self.options['reranker']!r} is invalid: one of {', '.join(RERANKERS)}")

    def identity(self) -> Mapping[str, Any]:
        return {**{package: installed_version(package) for package in self.packages}, "adapter": 1}

    def budget(self) -> Mapping[str, Any]:
        return {"edges": self.options["edges"], "nodes": self.options["nodes"]}

    @classmethod
    def label(cls, budget: Mapping[str, Any], options: Mapping[str, Any]) -> str:
        shown = f" ({budget['edges']} facts, {budget['nodes']} entities)" if {"edges", "nodes"} <= set(budget) else ""
        return "Graphiti" + shown

    def prepare(self) -> None:
        _clients()
        warn_unpinned("graphiti", "graphiti-core", PINNED)

    async def ingest(self, history: HistoryView, services: Any) -> GraphitiMemory:
        info = await services.embedding_info()
        token = _SERVICES.set(services)
        graph = None
        try:
            graph = _new_graph(info.dimensions)
            from graphiti_core.nodes import EpisodeType

            # The cross-encoder would make every recorded turn's search a model call per candidate: not recorded.
            turns = SearchedTurns() if services.recording_turns and self.options["reranker"] != "cross_encoder" \
                else None
            episodes = 0
            for session in history.sessions_by_date():
                if turns is not None:
                    said = turns.user_messages(session)
                    found = await self._searches(graph, said, services, info.max_input_tokens) if episodes else ()
                    turns.record(services, session, found)
                body = "\n".join(f"{t.role}: {t.content.strip()}" for t in session.turns if t.content.strip())
                if not body:
                    continue
                await graph.add_episode(name=session.id, episode_body=body, source=EpisodeType.message,
                                        source_description="conversation session",
                                        reference_time=_aware(session.date))
                episodes += 1
            entities, facts = _contents(graph)
        except BaseException:
            if graph is not None:
                _close_graph(graph)  # a failed build is never handed on, so nothing else would close it
            raise
        finally:
            _SERVICES.reset(token)
        return GraphitiMemory(graph, episodes, len(entities), len(facts))

    def close(self, memory: GraphitiMemory) -> None:
        _close_graph(memory.graph)

    async def context(self, memory: GraphitiMemory, question: QuestionView, services: Any) -> MemoryContext:
        token = _SERVICES.set(services)
        try:
            found = await memory.graph.search_(question.question, config=self.search_config)
        finally:
            _SERVICES.reset(token)
        edges, nodes = found.edges[: self.options["edges"]], found.nodes[: self.options["nodes"]]
        return MemoryContext(memory=_shown(edges, nodes), detail={"facts_shown": len(edges),
                                                                          "entities_shown": len(nodes)})

    async def _searches(self, graph: Any, messages: list[str], services: Any, limit: int | None) -> list[str]:
        """What an agent's search would show at each of ``messages`` (the per-turn prompts; a blank message finds
        nothing), their vectors asked for in one request, each text within the embedding model's input limit."""
        asked = [(i, fit_to_limit(services, " ".join(m.split()), limit)) for i, m in enumerate(messages) if m.strip()]
        vectors = await services.embed([text for _, text in asked]) if asked else []
        shown = [""] * len(messages)
        for (i, text), vector in zip(asked, vectors, strict=True):
            found = await graph.search_(text, config=self.search_config, query_vector=vector)
            shown[i] = _shown(found.edges[: self.options["edges"]], found.nodes[: self.options["nodes"]])
        return shown

    @functools.cached_property
    def search_config(self) -> Any:
        """Graphiti's search recipe for the options (made once: every question and recorded turn searches with it)."""
        from graphiti_core.search.search_config import (
            EdgeReranker,
            EdgeSearchConfig,
            EdgeSearchMethod,
            NodeReranker,
            NodeSearchConfig,
            NodeSearchMethod,
            SearchConfig,
        )

        reranker = self.options["reranker"]
        edge_methods = [EdgeSearchMethod.bm25, EdgeSearchMethod.cosine_similarity]
        node_methods = [NodeSearchMethod.bm25, NodeSearchMethod.cosine_similarity]
        if reranker == "cross_encoder":  # Graphiti's cross-encoder recipe widens the candidates by graph distance
            edge_methods.append(EdgeSearchMethod.bfs)
            node_methods.append(NodeSearchMethod.bfs)
        edges, nodes = self.options["edges"], self.options["nodes"]
        return SearchConfig(
            edge_config=EdgeSearchConfig(search_methods=edge_methods, reranker=getattr(EdgeReranker, reranker))
            if edges else None,
            node_config=NodeSearchConfig(search_methods=node_methods, reranker=getattr(NodeReranker, reranker))
            if nodes else None,
            limit=max(edges, nodes))

    def memory_digest(self, memory: GraphitiMemory) -> str:
        entities, facts = _contents(memory.graph)
        return hashlib.sha256("\n".join(entities + facts).encode()).hexdigest()

    def build_figures(self, memory: GraphitiMemory) -> Mapping[str, Any]:
        return {"episodes": memory.episodes, "entities": memory.entities, "facts": memory.facts}

    def build_warnings(self, memory: GraphitiMemory) -> Sequence[str]:
        found = []
        if memory.episodes and memory.facts == 0:
            found.append("0 facts extracted")
        if memory.episodes and memory.entities == 0:
            found.append("0 entities extracted")
        return found

    def offline_responder(self) -> Any:
        return graphiti_offline_reply


def _new_graph(dimensions: int) -> Any:
    """A Graphiti over a fresh in-process Kuzu database, with the full-text indexes its search needs."""
    LLMHook, EmbedderHook, RerankerHook = _clients()
    import kuzu
    from graphiti_core import Graphiti
    from graphiti_core.driver.driver import GraphProvider
    from graphiti_core.driver.kuzu_driver import KuzuDriver
    from graphiti_core.graph_queries import get_fulltext_indices
    from graphiti_core.llm_client.config import LLMConfig

    driver = _serial_driver(KuzuDriver)(db=":memory:")
    # The driver's build_indices does nothing for Kuzu, and BM25 search fails without these indexes.
    connection = kuzu.Connection(driver.db)
    try:
        connection.execute("LOAD EXTENSION fts")
        for query in get_fulltext_indices(GraphProvider.KUZU):
            connection.execute(query)
    finally:
        connection.close()
    return Graphiti(llm_client=LLMHook(LLMConfig(api_key="om-eval", model="models.observer")),
                    embedder=EmbedderHook(), cross_encoder=RerankerHook(), graph_driver=driver)


@functools.cache
def _serial_driver(kuzu_driver: type) -> type:
    """Graphiti's Kuzu driver, one query at a time with its result read before the next starts.

    Graphiti runs a search's parts concurrently; the stock driver runs each query on its connection's thread and
    reads the result on the loop's, so one result was read while the next query ran on the same connection, which
    corrupted the heap ("corrupted double-linked list", 2 of 6 LoCoMo ``locomo_0`` runs at ``run.concurrency=4``).
    With that fixed, Kuzu's own parallel execution once spun forever in its task scheduler (1 of 3 runs); each
    query runs on one thread since (0 failures in 11 runs, about twice the time).
    """

    class SerialKuzuDriver(kuzu_driver):  # type: ignore[misc,valid-type,unused-ignore]  # Any without the extra
        def __init__(self, db: str) -> None:
            with warnings.catch_warnings():  # deprecated upstream (Kuzu was archived): the docs say so once
                warnings.simplefilter("ignore", DeprecationWarning)
                super().__init__(db=db)
            self.one_query = asyncio.Lock()
            for connection in self.client.connections:
                connection.set_max_threads_for_exec(1)  # see the docstring

        async def execute_query(self, cypher_query_: str, **kwargs: Any) -> Any:
            async with self.one_query:
                result = await super().execute_query(cypher_query_, **kwargs)
            # Kuzu's async connection answers a cancelled query with no result instead of raising: the question must
            # stop, not go on with an empty search (and be stored as answered).
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise asyncio.CancelledError
            return result

    return SerialKuzuDriver


def _close_graph(graph: Any) -> None:
    """Close the graph's Kuzu connection and database: left to the collector, each graph's native memory stays
    with the process (about 40 MB a graph, measured over 20 small graphs). Its query thread is let finish first (a
    cancelled query may still run there; closing its connection under it would free memory it uses); each step is
    tried even when one before failed."""
    client = graph.driver.client
    for step in (lambda: client.executor.shutdown(wait=True), client.close, graph.driver.db.close):
        try:
            step()
        except Exception as error:
            warnings.warn(f"memory=graphiti: closing a graph: {type(error).__name__}: {error}", RuntimeWarning,
                          stacklevel=2)


def _contents(graph: Any) -> tuple[list[str], list[str]]:
    """The graph's entities and facts as sorted lines of what the actor may be shown (names, summaries, facts and
    their dates; never Graphiti's random ids or wall-clock stamps). Synchronous (the harness digests a memory outside
    the loop's tasks), so read on the driver's own query thread, after the query it may be running: the
    serial driver's lock holder reads its result only once this returns."""
    return graph.driver.client.executor.submit(_read_contents, graph.driver.db).result()  # type: ignore[no-any-return]


def _read_contents(db: Any) -> tuple[list[str], list[str]]:
    import kuzu

    connection = kuzu.Connection(db)
    connection.set_max_threads_for_exec(1)
    try:
        entities = sorted(f"{name}|{summary}" for name, summary in
                          _rows(connection, "MATCH (n:Entity) RETURN n.name, n.summary"))
        facts = sorted(f"{fact}|{start}|{end}" for fact, start, end in
                       _rows(connection, "MATCH (e:RelatesToNode_) RETURN e.fact, e.valid_at, e.invalid_at"))
    finally:
        connection.close()
    return entities, facts


def _rows(connection: Any, query: str) -> list[list[Any]]:
    result = connection.execute(query)
    rows: list[list[Any]] = []
    while result.has_next():
        rows.append(result.get_next())
    return rows


def _shown(edges: Sequence[Any], nodes: Sequence[Any]) -> str:
    """Facts with the dates they held, then entities with their summaries, as the actor is shown them."""
    lines = []
    if edges:
        lines.append("Facts, with the dates they held:")
        lines += [f"- {edge.fact} ({_span(edge.valid_at, edge.invalid_at)})" for edge in edges]
    if nodes:
        lines.append("Entities:")
        lines += [f"- {node.name}: {' '.join(str(node.summary or '').split())}".rstrip(": ") for node in nodes]
    return "\n".join(lines)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _span(valid_at: datetime | None, invalid_at: datetime | None) -> str:
    start = f"{valid_at:%Y-%m-%d}" if valid_at else _UNDATED
    return f"from {start} until {invalid_at:%Y-%m-%d}" if invalid_at else f"since {start}"


# --- the offline responder: Graphiti's extraction prompts answered from the episode's own words -----------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_NAME_RUN = re.compile(r"\b([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)")
_MAX_ENTITIES = 12
_MAX_SUMMARY = 250


def graphiti_offline_reply(messages: Sequence[Mapping[str, Any]], request: Mapping[str, Any]) -> str | None:
    """The scripted model's answer to Graphiti's structured prompts, built from the episode's own words (speakers
    and capitalised names as entities, each user sentence naming one as a fact dated by the episode), so the graph
    holds something real offline; the reranker's question is answered by word overlap. Other prompts: not ours."""
    prompt = str(messages[-1].get("content") or "") if messages else ""
    if messages and str(messages[0].get("content")) == RERANK_INSTRUCTION:
        return _rerank_reply(prompt)
    response_format = request.get("response_format") or {}
    name = (response_format.get("json_schema") or {}).get("name") if isinstance(response_format, Mapping) else None
    answer = _REPLIES.get(str(name))
    return json.dumps(answer(prompt)) if answer is not None else None


def _section(prompt: str, *tags: str) -> str:
    for tag in tags:
        start = prompt.find(f"<{tag}>")
        if start >= 0:
            end = prompt.find(f"</{tag}>", start)
            return prompt[start + len(tag) + 2: end if end >= 0 else None].strip()
    return ""


def _json_list(text: str) -> list[Any]:
    found: list[Any] = []
    for line in text.splitlines() or [text]:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        found += value if isinstance(value, list) else [value]
    return found


def _said(prompt: str, *tags: str) -> list[tuple[str, str]]:
    """(speaker, sentence) for every sentence of the section's ``speaker: text`` lines."""
    pairs = []
    for line in _section(prompt, *tags).splitlines():
        speaker, colon, text = line.partition(":")
        if colon and speaker.strip() and " " not in speaker.strip():
            pairs += [(speaker.strip(), s.strip()) for s in _SENTENCE_END.split(text.strip()) if s.strip()]
    return pairs


def _entities(prompt: str) -> dict[str, Any]:
    said = _said(prompt, "CURRENT MESSAGE")
    names: list[str] = []
    for speaker, sentence in said:
        if speaker not in names:
            names.append(speaker)
        if speaker != "user":
            continue
        words = sentence.split()
        runs = [run for run in _NAME_RUN.findall(sentence)
                if run != "I" and not run.startswith("I'")  # the speaker's own "I", "I'm"
                and not (sentence.startswith(run) and " " not in run)]  # a capital that only starts the sentence
        if not runs:  # a sentence without a name: its longest word stands for its topic
            longest = max((w.strip(".,!?;:'\"()") for w in words), key=len, default="")
            runs = [longest.lower()] if len(longest) >= 4 else []
        names += [run for run in runs if run not in names]
    return {"extracted_entities": [{"name": n, "entity_type_id": 0, "episode_indices": [0]}
                                   for n in names[:_MAX_ENTITIES]]}


def _edges(prompt: str) -> dict[str, Any]:
    known = [str(e.get("name")) for e in _json_list(_section(prompt, "ENTITIES")) if isinstance(e, Mapping)]
    when = _section(prompt, "REFERENCE_TIME", "REFERENCE TIME").split("#")[0].strip() or None
    speaker = next((n for n in known if n.lower() == "user"), None)
    edges = []
    if speaker is not None:
        for who, sentence in _said(prompt, "CURRENT_MESSAGE", "CURRENT MESSAGE"):
            target = next((n for n in known if n != speaker and n.lower() in sentence.lower()), None)
            if who == "user" and target is not None:
                edges.append({"source_entity_name": speaker, "target_entity_name": target,
                              "relation_type": "MENTIONED", "fact": sentence[:300], "valid_at": when,
                              "invalid_at": None, "episode_indices": [0]})
    return {"edges": edges}


def _resolutions(prompt: str) -> dict[str, Any]:
    existing = {str(e.get("name", "")).lower(): e.get("candidate_id", e.get("idx", -1))
                for e in _json_list(_section(prompt, "EXISTING ENTITIES")) if isinstance(e, Mapping)}
    new = [e for e in _json_list(_section(prompt, "ENTITIES")) if isinstance(e, Mapping)]
    return {"entity_resolutions": [
        {"id": int(e.get("id", i)), "name": str(e.get("name", "")),
         "duplicate_candidate_id": int(existing.get(str(e.get("name", "")).lower(), -1))} for i, e in enumerate(new)]}


def _summaries(prompt: str) -> dict[str, Any]:
    text = " ".join(_section(prompt, "MESSAGES", "EPISODES").replace("\\n", " ").split())
    sentences = [s for s in _SENTENCE_END.split(text) if s.strip()]
    found = []
    for entity in _json_list(_section(prompt, "ENTITIES")):
        name = str(entity.get("name", "")) if isinstance(entity, Mapping) else ""
        about = [s.strip()[:120] for s in sentences if name and name.lower() in s.lower()]
        if about:
            found.append({"name": name, "summary": " ".join(about)[:_MAX_SUMMARY]})
    return {"summaries": found}


def _timestamps(prompt: str) -> dict[str, Any]:
    return {"valid_at": _section(prompt, "REFERENCE TIME", "REFERENCE_TIME").split("#")[0].strip() or None,
            "invalid_at": None}


def _batch_timestamps(prompt: str) -> dict[str, Any]:
    facts = _json_list(_section(prompt, "FACTS"))
    return {"timestamps": [{"valid_at": f.get("reference_time") if isinstance(f, Mapping) else None,
                            "invalid_at": None} for f in facts]}


def _no_duplicates(prompt: str) -> dict[str, Any]:
    return {"duplicate_facts": [], "contradicted_facts": []}


def _rerank_reply(prompt: str) -> str:
    query, _, passage = prompt.partition("\n\nPassage: ")
    words = {w.lower().strip(".,!?") for w in query.removeprefix("Query: ").split() if len(w) > 3}
    return "True" if words & {w.lower().strip(".,!?") for w in passage.split()} else "False"


_REPLIES = {
    "ExtractedEntities": _entities,
    "ExtractedEdges": _edges,
    "NodeResolutions": _resolutions,
    "SummarizedEntities": _summaries,
    "EdgeTimestamps": _timestamps,
    "BatchEdgeTimestamps": _batch_timestamps,
    "EdgeDuplicate": _no_duplicates,
}
