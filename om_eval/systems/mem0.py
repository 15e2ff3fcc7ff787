"""``memory=mem0``: the open-source mem0 library (``mem0ai``, the ``mem0`` extra) as a memory system.

mem0's own code builds and searches the memory; om-eval supplies what a fair comparison needs around it:

* **Its models are the run's.** mem0's LLM and embedder hooks are replaced by classes that call this question's
  services (the observer model for extraction, ``models.embedding`` for vectors), so every call is cached, retried
  and costed like OM's. mem0 is synchronous, so it runs through :func:`~om_eval.memory.bridge.run_sync` on a pool
  of its own.
* **Nothing is shared or left behind.** One fresh ``Memory`` per history (a LongMemEval question, a LoCoMo
  conversation), with an in-process Qdrant store and an in-memory history database: no ``/tmp/qdrant`` folder lock
  between questions, no ``~/.mem0/history.db``. Telemetry is off and ``MEM0_DIR`` points into the system temp
  folder, so importing mem0 writes nothing to the home folder.
* **Its clock is the history's.** mem0's extraction prompt ends with "Observation Date" and "Current Date" lines
  set to today; while a session is added they read the session's date (and each memory's ``created_at`` is the
  session date), so memories are dated as the conversation was, and the cache key does not change every day.
* **An empty memory is loud.** Extraction replies mem0 could not parse and a build that stored nothing are
  :meth:`build_warnings`, counted at the end of the run.

Sessions are added oldest first, one ``add`` per session (all its turns in one extraction call); the question is
answered from ``search(question, top_k)`` (threshold 0.1; semantic scoring only: mem0's BM25 half and its spaCy
entity linking need optional packages and are turned off, so a run does not depend on what else is installed), each
memory shown with its date, most relevant first.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import json
import logging
import os
import tempfile
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

from om_eval.memory.bridge import current_services
from om_eval.memory.system import MemoryContext, MemorySystemBase
from om_eval.memory.view import HistoryView, QuestionView
from om_eval.om.config import ConfigError
from om_eval.systems.library_turns import SearchedTurns, fit_to_limit, installed_version, warn_unpinned

__all__ = ["Mem0Memory", "Mem0System", "mem0_offline_reply"]

#: The mem0 release the adapter is written against (the ``mem0`` extra pins it).
PINNED = "2.2.1"
#: The session date mem0's prompt and memories carry while a session is added (``None``: mem0's own clock).
_SESSION_DATE: contextvars.ContextVar[datetime | None] = contextvars.ContextVar("om_eval_mem0_date", default=None)
#: The embedding model's input limit in tokens (``None``: not known): mem0 embeds a session's whole transcript to
#: search what it already stores, which can pass a hosted model's limit and fail the build.
_EMBED_LIMIT: contextvars.ContextVar[int | None] = contextvars.ContextVar("om_eval_mem0_embed_limit", default=None)
#: Vectors already paid for, by text: the per-turn searches embed a session's user messages in one request.
_KNOWN_VECTORS: contextvars.ContextVar[Mapping[str, list[float]] | None] = contextvars.ContextVar(
    "om_eval_mem0_vectors", default=None)
#: Whether this build asks for mem0's reply shape as a JSON schema (``memory.extraction_schema``).
_SCHEMA: contextvars.ContextVar[bool] = contextvars.ContextVar("om_eval_mem0_schema", default=False)
#: mem0's extraction reply (``{"memory": [{"id", "text"}, ...]}``, what its prompt's examples show) as a JSON schema
#: asking for at least one memory: under llama.cpp's grammar a small model can then write nothing else.
EXTRACTION_SCHEMA: dict[str, Any] = {"type": "json_schema", "json_schema": {"name": "mem0_extraction", "schema": {
    "type": "object", "additionalProperties": False, "required": ["memory"],
    "properties": {"memory": {"type": "array", "minItems": 1, "items": {
        "type": "object", "additionalProperties": False, "required": ["id", "text"],
        "properties": {"id": {"type": "string"}, "text": {"type": "string", "minLength": 1}}}}}}}}
#: mem0 logs this when it cannot parse an extraction reply, then stores nothing for the session.
_PARSE_ERROR = "Error parsing extraction response"
_USER = "user"


def _require_mem0() -> None:
    """Import mem0 (telemetry off and its folder out of the home directory before its first import, which reads
    both); a missing extra is named with its install command, whenever it is asked, not only on first use.

    Raises:
        ConfigError: mem0 cannot be imported.
    """
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", os.path.join(tempfile.gettempdir(), "om-eval-mem0"))
    try:
        import mem0  # noqa: F401  (imported once; later imports read sys.modules)
    except ImportError as error:
        raise ConfigError(f"memory=mem0 needs the mem0 extra ({error}): pip install 'om-eval[mem0]'",
                          option="memory") from None


@functools.cache
def _mem0() -> Any:
    """mem0, set up once (the first call is ``prepare``'s, on the main thread, after :func:`_require_mem0`): its
    model hooks routed here, its prompt dated by the session, and what depends on optional packages turned off
    (spaCy's entity linking and lemmas, fastembed's BM25), so a run is the same whatever else is installed and
    never downloads a model."""
    _require_mem0()
    import mem0
    import mem0.configs.prompts as prompts
    import mem0.utils.spacy_models as spacy_models
    from mem0.utils.factory import EmbedderFactory, LlmFactory

    spacy_models._load_failed_full = spacy_models._load_failed_lemma = True
    # Hydra logs at INFO: mem0 would print every vector insert; and without fastembed (not in the pinned extra) its
    # store warns at every insert that BM25 keyword scoring is off: search is semantic only (docs say so).
    logging.getLogger("mem0").setLevel(logging.WARNING)
    # mem0 asks its in-process Qdrant for payload indexes, which only a Qdrant server uses: a warning per memory.
    warnings.filterwarnings("ignore", message="Payload indexes have no effect in the local Qdrant")
    logging.getLogger("mem0.vector_stores.qdrant").setLevel(logging.ERROR)
    _no_telemetry()
    prompts.datetime = _SessionClock  # the prompt's dates read the session's date while one is added
    LlmFactory.register_provider("om_eval", f"{__name__}.ServicesLLM")
    EmbedderFactory.provider_to_class["om_eval"] = f"{__name__}.ServicesEmbedder"
    return mem0


def _no_telemetry() -> None:
    """mem0 reads ``MEM0_TELEMETRY`` once, at import: if something imported it before :func:`_mem0` set it, its
    event calls are still turned off here (no PostHog client is asked to send anything)."""
    import mem0.memory.main as main
    import mem0.memory.telemetry as telemetry

    telemetry.MEM0_TELEMETRY = False
    main.MEM0_TELEMETRY = False
    main.capture_event = lambda *args, **kwargs: None
    client = getattr(telemetry, "client_telemetry", None)
    if client is not None:
        client.posthog = None


class _SessionClock(datetime):
    """``datetime`` for mem0's prompt module: ``now()`` is the session being added, when there is one."""

    @classmethod
    def now(cls, tz: Any = None) -> Any:
        pinned = _SESSION_DATE.get()
        return datetime.now(tz) if pinned is None else pinned if tz is None else pinned.astimezone(tz)


@functools.cache
def _hooks() -> tuple[type, type]:
    """mem0's LLM and embedder hook classes, answered by the running question's services; made once, on first use
    (their bases are mem0's, an optional import)."""
    from mem0.embeddings.base import EmbeddingBase
    from mem0.llms.base import LLMBase

    class LLMHook(LLMBase):  # type: ignore[misc]  # mem0 is untyped
        def generate_response(self, messages: list[dict[str, Any]], response_format: Any = None,
                              tools: list[dict[str, Any]] | None = None, tool_choice: str = "auto",
                              **kwargs: Any) -> Any:
            if response_format == {"type": "json_object"} and not tools and _SCHEMA.get():
                response_format = EXTRACTION_SCHEMA
            reply = current_services().complete(messages, response_format=response_format, tools=tools,
                                                tool_choice=tool_choice if tools else None)
            if not tools:
                return reply.text
            return {"content": reply.text, "tool_calls": [
                {"name": call.name, "arguments": json.loads(call.arguments or "{}")} for call in reply.tool_calls]}

    class EmbedderHook(EmbeddingBase):  # type: ignore[misc]  # mem0 is untyped
        def embed(self, text: str, memory_action: Any = None) -> list[float]:
            vectors: list[float] = self.embed_batch([text], memory_action)[0]
            return vectors

        def embed_batch(self, texts: list[str], memory_action: Any = "add") -> list[list[float]]:
            known = _KNOWN_VECTORS.get()
            if known and all(str(text) in known for text in texts):
                return [known[str(text)] for text in texts]
            services = current_services()
            return services.embed([fit_to_limit(services, str(text), _EMBED_LIMIT.get()) for text in texts])

    return LLMHook, EmbedderHook


class ServicesLLM:
    """mem0's LLM hook, as mem0's factory makes it by name (:func:`_hooks`)."""

    def __new__(cls, config: Any = None) -> Any:
        return _hooks()[0](config)


class ServicesEmbedder:
    """mem0's embedder hook, as mem0's factory makes it by name (:func:`_hooks`)."""

    def __new__(cls, config: Any = None) -> Any:
        return _hooks()[1](config)


@dataclass
class Mem0Memory:
    """One history's mem0 ``Memory``, with what its build said."""

    library: Any = field(repr=False)
    stored: int
    """Memories in its store after the last session."""
    sessions: int
    parse_errors: int
    """Extraction replies mem0 logged as unparseable (each stored nothing for its session)."""
    embed_limit: int | None = None
    """The embedding model's input limit, for the question's search (:data:`_EMBED_LIMIT`)."""


class _CountParseErrors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.count = 0
        self.thread = threading.get_ident()

    def emit(self, record: logging.LogRecord) -> None:
        if threading.get_ident() == self.thread and _PARSE_ERROR in record.getMessage():
            self.count += 1


class Mem0System(MemorySystemBase):
    """mem0's open-source ``Memory`` behind the seam (see the module docstring)."""

    name = "mem0"
    records_turns = True
    uses_observer_model = True
    uses_embedding_model = True
    packages = ("mem0ai", "qdrant-client")
    about = "the open-source mem0 library (the memories its own search returns for the question, with their dates)"
    default_options: ClassVar[Mapping[str, Any]] = {"top_k": 20, "threshold": 0.1, "infer": True,
                                                    "extraction_schema": False}

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        super().__init__({**self.default_options, **(options or {})})
        top_k, threshold = self.options["top_k"], self.options["threshold"]
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"memory.top_k={top_k!r} is invalid: a number of memories >= 1")
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold <= 1:
            raise ValueError(f"memory.threshold={threshold!r} is invalid: a score between 0 and 1")
        if not isinstance(self.options["infer"], bool):
            raise ValueError(f"memory.infer={self.options['infer']!r} is invalid: true (mem0 extracts facts) or "
                             "false (every message stored as it is)")
        if not isinstance(self.options["extraction_schema"], bool):
            raise ValueError(f"memory.extraction_schema={self.options['extraction_schema']!r} is invalid: true (ask "
                             "for mem0's reply shape as a JSON schema) or false (mem0's own JSON mode)")

    def identity(self) -> Mapping[str, Any]:
        return {"mem0ai": installed_version("mem0ai"), "adapter": 1}

    def budget(self) -> Mapping[str, Any]:
        return {"top_k": self.options["top_k"]}

    @classmethod
    def label(cls, budget: Mapping[str, Any], options: Mapping[str, Any]) -> str:
        return "mem0" + (f" (top {budget['top_k']})" if "top_k" in budget else "")

    def prepare(self) -> None:
        _require_mem0()
        _mem0()
        warn_unpinned("mem0", "mem0ai", PINNED)

    async def ingest(self, history: HistoryView, services: Any) -> Mem0Memory:
        info = await services.embedding_info()
        built: Mem0Memory = await services.run_sync(self._build, history, info.dimensions, info.max_input_tokens)
        return built

    def _build(self, history: HistoryView, dimensions: int, limit: int | None) -> Mem0Memory:
        mem0 = _mem0()
        from qdrant_client import QdrantClient

        _EMBED_LIMIT.set(limit)  # this run_sync call's context only
        _SCHEMA.set(self.options["extraction_schema"])

        library = mem0.Memory.from_config({
            "llm": {"provider": "om_eval"}, "embedder": {"provider": "om_eval"},
            "vector_store": {"provider": "qdrant", "config": {
                "client": QdrantClient(location=":memory:"), "collection_name": "om_eval",
                "embedding_model_dims": dimensions}},
            "history_db_path": ":memory:",
        })
        library.vector_store._bm25_encoder = False  # mem0's "tried, not available": semantic search only, always
        counter = _CountParseErrors()
        logging.getLogger("mem0.memory.main").addHandler(counter)
        services = current_services()
        turns = SearchedTurns() if services.recording_turns else None
        stored_yet = False
        try:
            sessions = history.sessions_by_date()
            for session in sessions:
                if turns is not None:
                    turns.record(services, session, self._searches(library, turns.user_messages(session))
                                 if stored_yet else ())
                messages = [{"role": t.role, "content": t.content} for t in session.turns if t.content.strip()]
                if not messages:
                    continue
                when = _session_datetime(session.date)
                token = _SESSION_DATE.set(when)
                try:
                    library.add(messages, user_id=_USER, infer=self.options["infer"],
                                metadata={"created_at": when.isoformat(), "session_id": session.session_id})
                finally:
                    _SESSION_DATE.reset(token)
                stored_yet = True
        finally:
            logging.getLogger("mem0.memory.main").removeHandler(counter)
        stored = len(_all_memories(library))
        return Mem0Memory(library, stored, len(sessions), counter.count, limit)

    async def context(self, memory: Mem0Memory, question: QuestionView, services: Any) -> MemoryContext:
        found: list[dict[str, Any]] = await services.run_sync(self._search, memory, question.question)
        return MemoryContext(memory=_shown(found), detail={"hits": len(found), "stored": memory.stored})

    def _search(self, memory: Mem0Memory, question: str) -> list[dict[str, Any]]:
        _EMBED_LIMIT.set(memory.embed_limit)
        return self._hits(memory.library, question)

    def _hits(self, library: Any, query: str) -> list[dict[str, Any]]:
        result = library.search(query, top_k=self.options["top_k"], filters={"user_id": _USER},
                                threshold=float(self.options["threshold"]))
        hits: list[dict[str, Any]] = result.get("results", []) if isinstance(result, Mapping) else list(result)
        return hits

    def _searches(self, library: Any, messages: Sequence[str]) -> list[str]:
        """What an agent's search would show at each of ``messages`` (the per-turn prompts; a blank message finds
        nothing), their vectors asked for in one request rather than one search call each."""
        asked = [m for m in messages if m.strip()]
        if not asked:
            return [""] * len(messages)
        services = current_services()
        texts = [fit_to_limit(services, text, _EMBED_LIMIT.get()) for text in asked]
        token = _KNOWN_VECTORS.set(dict(zip(asked, services.embed(texts), strict=True)))
        try:
            return [_shown(self._hits(library, text)) if text.strip() else "" for text in messages]
        finally:
            _KNOWN_VECTORS.reset(token)

    def memory_digest(self, memory: Mem0Memory) -> str:
        texts = sorted(f"{m.get('created_at')}|{m.get('memory')}" for m in _all_memories(memory.library))
        return hashlib.sha256("\n".join(texts).encode()).hexdigest()

    def build_figures(self, memory: Mem0Memory) -> Mapping[str, Any]:
        return {"stored": memory.stored, "sessions": memory.sessions}

    def build_warnings(self, memory: Mem0Memory) -> Sequence[str]:
        warnings = []
        if memory.parse_errors:
            warnings.append(f"{memory.parse_errors} extraction replies mem0 could not parse (nothing stored from "
                            "those sessions)")
        if memory.stored == 0:
            hint = "" if self.options["extraction_schema"] or not self.options["infer"] else (
                " (a small local model answers mem0's instructions with an empty list; memory.extraction_schema=true "
                "asks for at least one memory in mem0's reply shape)")
            warnings.append("0 memories stored" + hint)
        return warnings

    def offline_responder(self) -> Any:
        return mem0_offline_reply


def _shown(hits: Sequence[Mapping[str, Any]]) -> str:
    """Memories as the actor is shown them: one line each, with its date, most relevant first."""
    return "\n".join(f"- [{_day(hit.get('created_at'))}] {hit.get('memory', '')}" for hit in hits)


def _all_memories(library: Any) -> list[dict[str, Any]]:
    found = library.get_all(filters={"user_id": _USER}, top_k=100_000)
    memories: list[dict[str, Any]] = found.get("results", []) if isinstance(found, Mapping) else list(found)
    return memories


def _session_datetime(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _day(value: Any) -> str:
    return str(value)[:10] if value else "undated"


def mem0_offline_reply(messages: Sequence[Mapping[str, Any]], request: Mapping[str, Any]) -> str | None:
    """The scripted model's answer to mem0's extraction prompt: one memory per user message of its "New Messages"
    section, in mem0's reply format, so the library stores something offline (other prompts: not ours)."""
    prompt = str(messages[-1].get("content") or "") if messages else ""
    if request.get("response_format") not in ({"type": "json_object"}, EXTRACTION_SCHEMA) or \
            "## New Messages" not in prompt:
        return None
    section = prompt.split("## New Messages", 1)[1].split("\n## ", 1)[0]
    said = [line.split(":", 1)[1].strip() for line in section.strip().splitlines()
            if line.lower().startswith("user:") and line.split(":", 1)[1].strip()]
    if not said:  # mem0 may send the messages as JSON
        try:
            parsed = json.loads(section.strip())
        except ValueError:
            parsed = []
        said = [str(m.get("content", "")).strip() for m in parsed if isinstance(m, Mapping) and m.get("role") == "user"
                and str(m.get("content", "")).strip()]
    return json.dumps({"memory": [{"id": str(i), "text": f"User said: {text[:300]}"} for i, text in enumerate(said)]})
