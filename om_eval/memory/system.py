"""The memory seam: what every memory system under test implements, and what the harness lends it.

A memory system does two things. It **ingests** a history (a LongMemEval haystack, a LoCoMo conversation) into a
memory, and it gives the actor its **context** for a question from that memory. The harness does the rest the same
way for every system: the actor's call, the judge, retrieval metrics, the store, the report. So every system is
compared on one footing, and none is shown the gold: it gets a :class:`~om_eval.memory.view.HistoryView` and a
:class:`~om_eval.memory.view.QuestionView`, never the benchmark's record.

Costs are not reported by the system: every model call it makes goes through :class:`MemoryServices` (the run's
client: cached, retried, in the question's ledger under a stage), so ingest cost and answer cost are told apart by
stage, and nothing can be left out. The context column is counted by the harness with the run's tokenizer.

:class:`MemorySystem` is the required part (five members); :class:`MemorySystemBase` declares every optional hook
with its default. A plain class with the five members is a system too: the registry reads the hooks it declares.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from om_eval.llm.stand_in import Responder
from om_eval.memory.completion import Completion, EmbeddingInfo
from om_eval.memory.digest import state_digest
from om_eval.memory.parts import PromptPart
from om_eval.memory.view import HistoryView, QuestionView
from om_eval.om.config import ModelSettings
from om_eval.om.model import INGEST_STAGES, ChatModel, Stage, ToolCall

__all__ = [
    "ANSWER_STAGES",
    "CHAT_STAGES",
    "EMBEDDING_STAGES",
    "INGEST_STAGES",
    "QUERY_STAGE",
    "TURN_SPACING",
    "ActorTools",
    "Forecast",
    "MemoryBuildError",
    "MemoryContext",
    "MemoryServices",
    "MemorySystem",
    "MemorySystemBase",
    "PinnedIdentity",
    "Stage",
    "TurnTrace",
]

T = TypeVar("T")

#: The stages a memory system's chat calls may name: ``observer`` and ``reflector`` build a memory (ingest cost),
#: ``query`` answers a question (a call made in ``context``: rewriting a query, reranking).
CHAT_STAGES: tuple[Stage, ...] = ("observer", "reflector", "query")
#: The stages its embeddings may name: ``retrieval`` indexes a history (ingest), ``query`` searches it for a question
#: (answer cost).
EMBEDDING_STAGES: tuple[Stage, ...] = ("retrieval", "query")
ANSWER_STAGES: tuple[Stage, ...] = ("query", "actor", "recall", "judge")
"""The stages whose calls answer or grade a question (paid on every question)."""
QUERY_STAGE: Stage = "query"
#: Time between a session's turns in a recorded turn table, as the OM replay times them by default, so every
#: system's turns line up (a provider's cache forgets an idle prefix after minutes: the spacing is measured too).
TURN_SPACING = timedelta(seconds=5)


@dataclass(frozen=True)
class MemoryContext:
    """What a memory system gives the actor for one question.

    Either ``memory`` (a text block the harness lays out with its own actor prompt: instructions, the block, the
    current date and the question) or ``messages`` (the actor's whole prompt, question included, when the system's
    published layout must be kept, as the LongMemEval reader's is).

    A retrieval system also says what it ranked: ``ranked_ids`` (best first) among ``corpus_ids`` (everything it
    searched). An id is a turn's or a session's ``id`` from the view, or a document of the system's own, listed in
    ``documents`` with the turns it holds. The harness checks the ranking (every id searched, none twice) and grades
    it against the gold: recall@k and NDCG@k are never the system's to say.
    """

    memory: str | None = None
    """The memory shown to the actor, as one text block (``None`` or empty: nothing to show)."""
    messages: tuple[Mapping[str, str], ...] | None = None
    """The actor's whole prompt; overrides the harness's layout when given."""
    injected: str | None = None
    """With ``messages``: the part of them that is memory (what the context column counts); default the whole
    prompt."""
    ranked_ids: tuple[str, ...] | None = None
    """Retrieval: the ids retrieved, best first (the whole ranking when it can: recall@k is kept up to k=50)."""
    corpus_ids: tuple[str, ...] | None = None
    """Retrieval: every id searched (default: ``ranked_ids``)."""
    documents: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Retrieval: for an id that is neither a turn's nor a session's, the view's turn ids its document holds."""
    shown_ids: tuple[str, ...] | None = None
    """A reader that shows the actor raw turns: the view's turn ids it shows whole (``None``: not said). The harness
    then traces each evidence turn as shown or cut (``items.evidence``)."""
    detail: Mapping[str, Any] = field(default_factory=dict)
    """The system's own figures for this answer (hits, messages shown...): JSON-ready, kept with the answer
    (``items.detail``) and shown by ``om-eval show``."""
    tools: ActorTools | None = None
    """Tools the actor may call before it answers (OM's recall in retrieval mode): the harness runs the exchange,
    every round through the run's client, and keeps each call (``items.recall_steps``)."""


class ActorTools(Protocol):
    """Tools a system offers the actor for one question. The harness asks the actor with :attr:`definitions`, runs
    each call it makes through :meth:`call` and hands the results back, until the actor answers or a budget is
    spent (then the actor is told to answer, and asking again fails the question)."""

    definitions: Sequence[Mapping[str, Any]]
    """The tools as the model is offered them (OpenAI's function-tool format)."""
    call_budget: int
    """Tool calls one question may make."""
    token_budget: int
    """Tokens (the run's tokenizer) the calls and their results may add to the prompt."""
    result_token_cap: int
    """A result is cut to this many tokens."""

    async def call(self, call: ToolCall) -> tuple[str, str | None]:
        """The result of ``call`` as the model reads it, and the kind of error when it failed (``None``: it ran).
        Nothing in a call may end the question: a bad call is answered with an error result."""
        ...


@dataclass(frozen=True)
class Forecast:
    """What a system expects one question to cost before a hosted run (:meth:`MemorySystemBase.forecast`)."""

    stages: Mapping[str, tuple[int, int, int]]
    """Calls, prompt tokens and completion tokens per stage of the system's own (``observer``, ``reflector``...)."""
    shown_tokens: int
    """Tokens of memory the actor is shown."""


class MemoryBuildError(RuntimeError):
    """Raised by ``ingest`` for a memory built to the end that must not answer (OM's after a failed reflection): the
    question fails and is retried on resume, nothing of the memory is kept, and ``events`` and ``figures`` (what
    happened while it was built, as :meth:`MemorySystemBase.build_events` and :meth:`~MemorySystemBase.build_figures`
    give them) are recorded with the failed question."""

    def __init__(self, message: str, events: Sequence[Mapping[str, Any]] = (),
                 figures: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.events = list(events)
        self.figures = dict(figures or {})


@dataclass(frozen=True)
class TurnTrace:
    """Where one turn of a history went in a memory (:meth:`MemorySystemBase.trace_turns`)."""

    status: str
    """The system's word for it (OM's: ``in_memory``, ``lost_at_reflection``, ``not_captured``, ``in_raw_tail``)."""
    lines: tuple[str, ...] = ()
    """What of the memory carries it (the lines that match it), best first."""


class MemoryServices(Protocol):
    """What the harness lends a memory system for one question: the run's models and tokenizer, with cost
    accounting built in. A new one is made per question (its calls land in that question's ledger), while a memory
    shared by several questions (a LoCoMo conversation's) is built once, with the first question's services."""

    options: Mapping[str, Any]
    """The system's options (the ``memory.*`` config group, its ``system`` key removed)."""

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` with the run's tokenizer."""
        ...

    async def complete(self, messages: Sequence[Mapping[str, Any]], *, stage: Stage | None = None,
                       response_format: Any = None, max_tokens: int | None = None, temperature: float | None = None,
                       seed: int | None = None, tools: Sequence[Mapping[str, Any]] | None = None,
                       tool_choice: Any = None, logprobs: bool | None = None, top_logprobs: int | None = None,
                       role: str = "observer") -> Completion:
        """A completion from the run's ``models.observer`` model (cached, retried, in the ledger under ``stage``:
        by default ``observer`` in ``ingest`` and ``query`` in ``context``). Only for a system that sets
        ``uses_observer_model = True``. ``role="small"``: ``models.small`` when the run sets it (for a system that
        declares ``uses_small_model``), else ``models.observer`` too.

        The call's own parameters go to the provider through litellm and into the cache key: ``response_format``
        (``"json_object"``, a JSON Schema mapping, a pydantic model class or an OpenAI ``response_format``;
        :func:`~om_eval.memory.completion.response_format_param`), ``max_tokens`` and ``temperature`` (over the
        model config's), ``seed``, ``tools``/``tool_choice``, ``logprobs``/``top_logprobs``. The reply is a
        :class:`~om_eval.memory.completion.Completion`: its text, as a ``str``, with the finish reason, tool
        calls, usage and log probabilities."""
        ...

    async def run_sync(self, fn: Callable[..., T], /, *args: Any, timeout: float | None = None, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` of a synchronous library on a thread pool of its own, with
        :func:`~om_eval.memory.bridge.current_services` giving it blocking twins of these services
        (:mod:`om_eval.memory.bridge`); ``timeout`` bounds the whole call."""
        ...

    async def embedding_info(self, model: str | None = None) -> EmbeddingInfo:
        """The vector size and input limit of ``model`` (default the run's ``models.embedding``), for a library
        that must size its vector store before the first call."""
        ...

    async def embed(self, texts: Sequence[str], *, model: str | None = None, stage: Stage | None = None
                    ) -> list[list[float]]:
        """One vector per text from ``model`` (default the run's ``models.embedding``), cached, in the ledger under
        ``stage``: by default ``retrieval`` in ``ingest`` (building an index) and ``query`` in ``context`` (what a
        question searches with). Only for a system that sets ``uses_embedding_model = True``."""
        ...

    @property
    def chat(self) -> ChatModel:
        """The run's client as the engine's model port: a call names its own :class:`ModelSettings` and stage and
        gets the whole reply (usage, tool calls). For a system whose models are its own settings
        (:meth:`MemorySystemBase.own_models`, OM's observer and reflector); every call is cached and in the ledger."""
        ...

    @property
    def recording_turns(self) -> bool:
        """Whether :meth:`record_turn` keeps what it is given (``run.turn_costs``): a system may skip the work of
        describing its turns when it does not."""
        ...

    def record_turn(self, parts: Sequence[PromptPart], *, at: datetime, reply: PromptPart | None = None) -> None:
        """While ``ingest`` replays a history: at a user turn, what an agent on this memory would send its model
        then, part by part (:class:`~om_eval.memory.parts.PromptPart`, ending with the user's message), and the
        reply it got (the history's own). The harness counts and prices it (``items.turns``); a system that records
        nothing is shown by the size of its answer-time context, when it retrieves, or not at all."""
        ...

    def scratch_folder(self) -> Path:
        """A folder of this memory's own, made on first use, for a library that insists on a path (a database file):
        under the results folder, shared by the questions that share the memory, removed once the memory is closed
        (:meth:`MemorySystemBase.close`)."""
        ...

    def record_table(self, table: Any) -> None:
        """A whole :class:`~om_eval.bench.turn_costs.TurnTable` a system built itself (OM's replay counts its turns
        from the engine's own token counts), in place of turns recorded one by one."""
        ...


@runtime_checkable
class MemorySystem(Protocol):
    """A memory system under test: the five members every system has.

    ``ingest`` turns a history into a memory (any object: it is handed back to ``context``, and shared by the
    questions of one LoCoMo conversation); ``context`` gives the actor its context for one question: a text block,
    or a :class:`MemoryContext`. Both may call models only through ``services``. ``context`` must not change the
    memory (the harness checks, and fails the question if it did), and may run concurrently on one memory.
    """

    name: str

    def identity(self) -> Mapping[str, Any]:
        """What shapes this system's memory and context besides the data and its options (a prompt's hash, a
        version): part of the run id, so a change here is a new run."""
        ...

    def budget(self) -> Mapping[str, Any]:
        """The context budget the actor gets (``top_k``, ``context_tokens``...): stored with the run, and compared
        by ``om-eval report`` across runs."""
        ...

    async def ingest(self, history: HistoryView, services: MemoryServices) -> Any:
        """The memory built from ``history``."""
        ...

    async def context(self, memory: Any, question: QuestionView, services: MemoryServices) -> MemoryContext | str:
        """The actor's context for ``question`` from ``memory``."""
        ...


class MemorySystemBase:
    """A memory system with every optional hook declared at its default: subclass it and override what differs.

    The hooks, and what the harness does with them:

    * :attr:`default_options`: the options ``memory.<option>=`` may set on the command line (others need Hydra's
      ``+memory.<option>=``); read from the class, before an instance exists.
    * :attr:`uses_observer_model`: the system calls :meth:`MemoryServices.complete`; the run then names
      ``models.observer`` and it enters the run id.
    * :attr:`uses_embedding_model`: the system calls :meth:`MemoryServices.embed`; the run then needs
      ``models.embedding``.
    * :attr:`uses_small_model`: the system calls :meth:`MemoryServices.complete` with ``role="small"`` (a library
      that asks for two model sizes); ``models.small``, when set, is then that model and enters the run id (unset:
      ``models.observer`` answers those calls too).
    * :attr:`max_output_tokens`: the actor's answer budget for this system's prompts (``None``: the actor's own).
    * :meth:`prepare`: called once before the first question (load a file, check a download): a failure stops the
      run before any store file exists.
    * :meth:`memory_digest`: what the harness compares before and after ``context`` to see that it left the memory
      unchanged.
    * :attr:`history_scope`: ``all`` (every session) or ``evidence``: the harness shows ``ingest`` only the sessions
      that hold the answer (the oracle reader: an upper bound, not a memory system).
    * :meth:`pinned_identity`: for a system whose runs predate the seam, the forms its run id, stored prompts and
      memory key took then, so those runs keep their ids (``None`` for every new system).
    * :meth:`snapshot` and :meth:`restore`: a memory as JSON-ready data and back. A system that gives them has its
      memory stored with the question that built it, and every run that differs only in the actor or the judge
      restores it instead of ingesting again (no model call, no recomputation).
    * :meth:`own_models`: models the system calls with settings of its own (through :attr:`MemoryServices.chat`),
      by the option that sets them: the run checks their keys and prices them like the actor's.
    * :attr:`config_groups`: the config groups besides ``memory`` that set its options (OM's ``om`` and
      ``prompt``): a sweep's derived label keeps their keys, and drops them for every other system.
    * :meth:`build_figures`: the system's figures about a memory it built (calls, sizes), stored with every answer
      from it; :meth:`build_events`: what happened while it was built, rows of the ``om_events`` table, stored
      once with the question that built it.
    * :meth:`forecast`: what one question costs the system's own stages, for the rough forecast printed before a
      hosted run (``None``: the harness estimates from :meth:`budget` and the options).
    * :meth:`trace_turns`: where each of some turns went in the memory, so the harness can say where each evidence
      turn went (``items.evidence``). It is asked after the answer is graded; for a memory several questions share,
      about every turn at once, so no question's evidence is ever named to it.
    * :meth:`build_warnings`: what went wrong in a build that still answers ("0 memories stored", "3 extraction
      replies unparseable"): kept with every answer from it, counted in the run's summary and shown by ``show``.
    * :meth:`offline_responder`: the system's own replies for the offline scripted model, consulted before the
      scripted model's own script (a library whose prompts the scripted model does not speak).
    * :attr:`packages`: the distributions the system runs on (its library), whose versions the run records
      (``runs.packages``); a plugin's own distribution and its requirements are recorded without it.
    * :attr:`about` and :meth:`label`: what the system shows the actor, in a few words, and how a run of it is named
      in tables, legends and the HTML view (from the budget and options it stored): read from the class by
      ``om-eval report``, ``plot`` and ``view``, so a report names a system without building it.
    * :attr:`options_group`: the run-config group its options are stored under (``memory``; a baseline reader's
      ``baseline``, OM's its own groups, as their runs stored them before the seam): reports read its options there.
    * :attr:`reads_history`: it is shown the raw history rather than a memory it built (a baseline reader): reports
      mark its runs as readers.
    * :attr:`records_turns` and :attr:`no_turns_reason`: it records its turns (:meth:`MemoryServices.record_turn`),
      so a run of it without a turn table predates them or turned them off; or why it has no turns to record.
    * :meth:`close`: called once on every memory the system built or restored, after the last question answered
      from it (a LoCoMo conversation's once its questions are done, at the latest when the run ends), even when
      answering failed: free what the memory holds outside Python (a database, threads). Its scratch folder
      (:meth:`MemoryServices.scratch_folder`) is removed after it. A build that raises (``MemoryBuildError`` or any
      other error) hands no memory back, so ``ingest`` frees what it made before raising.

    :meth:`prepare` is the setup hook (once per run, before the first question); :meth:`close` the teardown, per
    memory.
    """

    name: str = ""
    default_options: ClassVar[Mapping[str, Any]] = {}
    uses_observer_model: bool = True
    uses_embedding_model: bool = False
    uses_small_model: bool = False
    max_output_tokens: int | None = None
    history_scope: str = "all"
    config_groups: tuple[str, ...] = ()
    packages: ClassVar[tuple[str, ...]] = ()
    about: ClassVar[str] = ""
    options_group: ClassVar[str] = "memory"
    reads_history: ClassVar[bool] = False
    records_turns: ClassVar[bool] = False
    no_turns_reason: ClassVar[str] = ""

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        """The registry builds a system from its ``memory.*`` options; this keeps them as :attr:`options`."""
        self.options: Mapping[str, Any] = dict(options or {})

    def identity(self) -> Mapping[str, Any]:
        return {}

    def budget(self) -> Mapping[str, Any]:
        return {}

    @classmethod
    def label(cls, budget: Mapping[str, Any], options: Mapping[str, Any]) -> str:
        """How a run is named in tables, legends and the HTML view, from the :meth:`budget` it stored and its options
        (the run's :attr:`options_group`, ``memory`` for all but om-eval's oldest systems): its name by default."""
        return cls.name

    async def ingest(self, history: HistoryView, services: MemoryServices) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define ingest(history, services)")

    async def context(self, memory: Any, question: QuestionView, services: MemoryServices) -> MemoryContext | str:
        raise NotImplementedError(f"{type(self).__name__} must define context(memory, question, services)")

    def prepare(self) -> None:
        """Nothing to prepare by default."""

    def memory_digest(self, memory: Any) -> str:
        """A digest of everything reachable from ``memory`` (:func:`~om_eval.memory.digest.state_digest`);
        override it with something cheaper when the memory is large and its changes show in a few fields."""
        return state_digest(memory)

    def pinned_identity(self) -> PinnedIdentity | None:
        """The identity forms of a system older than the seam (``None``: the harness's forms, for every new one)."""
        return None

    def snapshot(self, memory: Any) -> Any:
        """``memory`` as JSON-ready data for :meth:`restore`; ``None`` (the default): not kept, so another run builds
        it again (its model calls then come from the response cache)."""
        return None

    async def restore(self, data: Any, services: MemoryServices) -> Any:
        """The memory :meth:`snapshot` described, bound to this question's ``services``."""
        raise NotImplementedError(f"{type(self).__name__} gives snapshots but defines no restore(data, services)")

    def own_models(self) -> Mapping[str, ModelSettings]:
        """Models called with settings of the system's own, by the option path that sets each (none by default)."""
        return {}

    def build_figures(self, memory: Any) -> Mapping[str, Any]:
        """Figures about ``memory`` (JSON-ready), kept with every answer from it; none by default."""
        return {}

    def build_events(self, memory: Any) -> Sequence[Mapping[str, Any]]:
        """What happened while ``memory`` was built, as ``om_events`` rows; none by default."""
        return ()

    def trace_turns(self, memory: Any, history: HistoryView, turn_ids: Sequence[str]) -> Mapping[str, TurnTrace]:
        """Where each turn of ``turn_ids`` went in ``memory``; nothing said by default."""
        return {}

    def build_warnings(self, memory: Any) -> Sequence[str]:
        """What went wrong building ``memory`` that does not stop it answering; none by default."""
        return ()

    def close(self, memory: Any) -> None:
        """Free what ``memory`` holds outside Python; nothing by default (Python's collector frees the rest)."""

    def offline_responder(self) -> Responder | None:
        """Replies of the system's own for the scripted model (:func:`~om_eval.llm.stand_in.register_responder`):
        given the plain messages and the request (``response_format``, ``tools``), the reply text, or ``None`` to
        leave the call to the scripted model. ``None`` (the default): the scripted model answers every call."""
        return None

    def forecast(self, history_tokens: int) -> Forecast | None:
        """What a question whose history holds ``history_tokens`` (about four characters a token) costs the
        system's own stages, cold cache; ``None`` (the default): the harness's estimate from the budget."""
        return None

    @property
    def traces_turns(self) -> bool:
        """Whether the system overrides :meth:`trace_turns`."""
        return type(self).trace_turns is not MemorySystemBase.trace_turns

    @property
    def keeps_snapshots(self) -> bool:
        """Whether the system overrides :meth:`snapshot` (the harness then looks for a stored memory first)."""
        return type(self).snapshot is not MemorySystemBase.snapshot

    @property
    def restores_snapshots(self) -> bool:
        """Whether the system overrides :meth:`restore` (the registry refuses a system that keeps snapshots without)."""
        return type(self).restore is not MemorySystemBase.restore


@dataclass(frozen=True)
class PinnedIdentity:
    """How a system's runs were identified before the seam existed, kept so that they keep their ids and resume.

    The harness's own forms are: the run id hashes the system's :meth:`~MemorySystem.identity` and the harness's
    actor layout; ``runs.prompt_hashes`` stores them with the system's name; the memory key is
    ``<name>:<hash of the options, identity and models>``, followed per history by the history's hash.
    """

    prompts: Mapping[str, Any]
    """What the run id hashes as the run's prompts (the judge's templates are added to it)."""
    stored_prompts: Mapping[str, Any]
    """What ``runs.prompt_hashes`` stores (a resumed run must store the same)."""
    memory_key: str
    """``runs.memory_key``."""
    per_history: bool = False
    """Whether an item's memory key adds the history's hash (``<memory_key>-<hash>``); else it is ``memory_key``."""
    run_id_extra: Mapping[str, Any] = field(default_factory=dict)
    """Entries the run id hashes beside the prompts (OM's engine revision, once past the pinned one)."""


#: The optional hooks, as :class:`MemorySystemBase` declares them (what a plain class may set too).
HOOKS = ("default_options", "uses_observer_model", "uses_embedding_model", "max_output_tokens", "prepare",
         "memory_digest", "history_scope", "pinned_identity", "snapshot", "restore", "own_models", "config_groups",
         "build_figures", "build_events", "trace_turns", "forecast", "build_warnings", "offline_responder", "packages",
         "uses_small_model", "close", "about", "label", "options_group", "reads_history", "records_turns",
         "no_turns_reason")
