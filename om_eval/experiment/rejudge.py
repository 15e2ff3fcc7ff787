"""``om-eval rejudge RUN judge=…``: grade a run's stored answers again with another judge, replaying nothing.

The run's own configuration is the starting point; the overrides may change only the judge: a judge group
(``judge=official``), a judge model group (``model@models.judge=gpt-4o-judge``) or dotted keys under ``judge.``
or ``models.judge.``. Every verdict goes to the run's ``judgments`` table beside the original judge's, keyed by
the judge's identity, so reports can measure how far judges agree (Cohen's kappa) on the very same answers.
The judge's calls are stored with the run's other calls (they are paid for) and go through the response cache,
so re-judging again with the same judge costs nothing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from om_eval.data.records import Question, parse_lme_date

#: Override prefixes rejudge accepts: everything else would change the answers, not their grading.
JUDGE_OVERRIDES = ("judge=", "judge.", "model@models.judge=", "models.judge.", "+judge.", "+models.judge.")


class RejudgeError(ValueError):
    """The re-judging cannot be done as asked (the message says why and what to do)."""


@dataclass
class RejudgeResult:
    run_id: str
    judge_identity: dict[str, Any]
    judged: int = 0
    errors: int = 0
    skipped: int = 0
    """Items with no answer to grade (failed questions)."""
    agreement: list[Any] = field(default_factory=list)
    probes: int = 0
    """Probe answers graded (``probes=True``)."""
    probe_errors: int = 0
    first_error: str | None = None
    """The message of the first answer (or, failing none, the first probe) the judge could not grade: why it
    failed, which otherwise only the store's ``judgments.error`` holds."""

    @property
    def name(self) -> str:
        """The judge as reports name it, ``<protocol>:<model>``."""
        from om_eval.report.agreement import judge_name

        return judge_name(self.judge_identity)


def judge_config(stored: Mapping[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """The stored run config with its judge changed by ``overrides`` (Hydra syntax).

    Raises:
        RejudgeError: an override touches something other than the judge, or names no judge change at all.
    """
    import yaml
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from om_eval.configs import CONFIG_DIR, searchpath_override, user_config_dir
    from om_eval.experiment.schema import register_configs

    if not overrides:
        raise RejudgeError("name the judge to grade with, e.g. judge=official, judge=house "
                           "model@models.judge=gpt-4o-judge, or judge.parse=mastra")
    foreign = [o for o in overrides if not o.startswith(JUDGE_OVERRIDES)]
    if foreign:
        raise RejudgeError(f"rejudge only changes the judge; {', '.join(foreign)} would change the answers. "
                           "Use judge=…, judge.<key>=…, model@models.judge=… or models.judge.<key>=…, or start a "
                           "new run with om-eval run")
    config = OmegaConf.create(json.loads(json.dumps(dict(stored), default=str)))
    groups = [o for o in overrides if o.startswith(("judge=", "model@models.judge="))]
    dotted = [o.lstrip("+") for o in overrides if o not in groups]
    if groups:
        from hydra.errors import HydraException

        register_configs()
        try:
            user = user_config_dir()  # om-eval rejudge --config-dir: the user's judge models too
            searched = [searchpath_override(user)] if user is not None else []
            with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
                composed = compose("config", overrides=[*groups, *searched])
        except HydraException as error:  # an unknown judge or model config: its message names the choices
            raise RejudgeError(f"{' '.join(groups)}: {error}") from None
        if any(o.startswith("judge=") for o in groups):
            config.judge = composed.judge
            if "source" in stored.get("judge", {}) and "source" not in config.judge:
                config.judge.source = stored["judge"]["source"]
        if any(o.startswith("model@models.judge=") for o in groups):
            config.models.judge = composed.models.judge
    for override in dotted:
        key, _, value = override.partition("=")
        if not _:
            raise RejudgeError(f"override {override!r} has no value; write key=value")
        OmegaConf.update(config, key, yaml.safe_load(value) if value else value, force_add=True)
    return OmegaConf.to_container(config, resolve=True)  # type: ignore[return-value]  # config is a DictConfig: a dict


def _question(item: Mapping[str, Any]) -> Question | None:
    """The question as the judge needs it, rebuilt from the item (runs stored before v2 lack the fields)."""
    if not item.get("question") or item.get("gold_answer") is None or not item.get("question_date"):
        return None
    return Question(
        question_id=item["question_id"], question_type=item["question_type"], question=item["question"],
        answer=item["gold_answer"], question_date=parse_lme_date(item["question_date"]),
        question_date_text=item["question_date"], sessions=(), answer_session_ids=(),
    )


def _questions(items: Sequence[Mapping[str, Any]], config: Mapping[str, Any]) -> dict[str, Question]:
    # Another benchmark's question carries what an item does not keep (LoCoMo's unanswerable flag and the note its
    # judge reads): its dataset is read again, checked against its pinned sha256.
    rebuilt = (config.get("dataset") or {}).get("benchmark") in (None, "longmemeval")
    questions = {i["question_id"]: q for i in items if rebuilt and (q := _question(i)) is not None}
    missing = [i["question_id"] for i in items if i["question_id"] not in questions]
    if missing:  # an older store: the dataset is read again (it is sha256-checked where it is pinned)
        from om_eval.experiment.job import load_run_dataset

        by_id = load_run_dataset(config["dataset"]).by_id()
        absent = [qid for qid in missing if qid not in by_id]
        if absent:
            raise RejudgeError(f"the run's dataset no longer has questions {', '.join(absent[:5])}")
        questions.update({qid: by_id[qid] for qid in missing})
    return questions


async def _grade(work: Sequence[tuple[Question, str]], judge: Any, client: Any,
                 concurrency: int) -> list[tuple[Any, list[Any]]]:
    """Grade each ``(question, answer text)``, at most ``concurrency`` at a time: its verdict and its own calls."""
    from om_eval.bench.judging.judge import judge_answer
    from om_eval.llm.ledger import Ledger

    gate = asyncio.Semaphore(concurrency)

    async def one(question: Question, text: str) -> tuple[Any, list[Any]]:
        ledger = Ledger()
        async with gate:
            verdict = await judge_answer(judge, client.with_ledger(ledger), question, text)
        return verdict, list(ledger.records)

    return list(await asyncio.gather(*(one(q, text) for q, text in work)))


def rejudge_run(results_dir: str | Path, run: str, overrides: Sequence[str], *, concurrency: int = 4,
                cache_dir: str | None = None, probes: bool = False) -> RejudgeResult:
    """Grade every answered question of ``run`` (an id, id prefix, label or experiment) with the judge
    ``overrides`` give.

    With ``probes`` the judge also grades each question's probe answers (:mod:`om_eval.bench.judging.probes`).

    Raises:
        RejudgeError: bad overrides, ``judge=panel`` (use :func:`rejudge_panel`), a judge model without its
            credentials, or no run / several runs match.
        StoreBusyError: the run is being written (running or resumed elsewhere); wait for it to end.
    """
    from om_eval.experiment.job import make_judge

    target = _Target.open(results_dir, run, overrides, cache_dir)
    if target.config["judge"].get("mode") == "panel":
        raise RejudgeError("judge=panel grades under several protocols: use om-eval rejudge RUN judge=panel "
                           "(rejudge_panel)")
    missing = _missing_credentials(target.spec.judge_model)
    if missing:  # every verdict would be an error, stored beside the run's real ones
        raise RejudgeError(f"{missing}; nothing was graded")
    result = target.grade(make_judge(target.spec), concurrency, probes=probes)
    result.agreement = target.agreement()
    return result


def _missing_credentials(model: Any) -> str | None:
    """Why ``model`` (a judge's :class:`~om_eval.om.config.ModelSettings`) cannot be called here, if it cannot."""
    from om_eval.llm.credentials import describe_missing, missing_credentials

    names = missing_credentials(model.model, model.provider_options)
    return f"missing credentials for {model.model}: set {describe_missing(names)}" if names else None


@dataclass(frozen=True)
class PanelSkip:
    """A panel entry not graded, and why."""

    reason: str
    by_design: bool
    """Skipped because of where it ran, not because something is wrong: the benchmark refuses the protocol's
    templates, the upstream templates cannot be downloaded (offline) and no ``judge.source`` was given, or a hosted
    judge model has no credentials here. ``om-eval rejudge`` exits 0 over such skips unless ``--strict``."""


@dataclass
class PanelResult:
    """What a panel re-judging did: one :class:`RejudgeResult` per protocol graded, and those it skipped."""

    run_id: str
    judges: list[RejudgeResult] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    """The panel entry of each judge (``house``, ``lenient:gpt-4o-judge``...)."""
    skipped: dict[str, PanelSkip] = field(default_factory=dict)
    """Panel entries not graded, by label, with why."""
    agreement: list[Any] = field(default_factory=list)


def rejudge_panel(results_dir: str | Path, run: str, overrides: Sequence[str], *, concurrency: int = 4,
                  cache_dir: str | None = None, probes: bool = False) -> PanelResult:
    """Grade ``run``'s stored answers under every protocol of ``judge.panel`` (:mod:`om_eval.bench.judging.protocols`).

    ``overrides`` hold ``judge=panel`` and optionally ``judge.panel=[...]``, ``judge.source=...`` or a judge
    model. A protocol the run's benchmark cannot be graded by, whose judge model lacks credentials, or whose
    upstream templates cannot be loaded is skipped with the reason (in :attr:`PanelResult.skipped`); the others
    are graded.

    Raises:
        RejudgeError: bad overrides, or no run / several runs match.
        ConfigError: a malformed ``judge.panel``.
    """
    from om_eval.bench.benchmark import benchmark_named
    from om_eval.bench.judging.judge import judge_model_settings
    from om_eval.bench.judging.official_templates import OfficialTemplateError, TemplateHashMismatch
    from om_eval.bench.judging.protocols import panel_judge, parse_panel

    target = _Target.open(results_dir, run, overrides, cache_dir)
    judge_group = target.config["judge"]
    if judge_group.get("mode") != "panel":
        raise RejudgeError("rejudge_panel needs judge=panel among the overrides")
    benchmark = benchmark_named(target.config.get("dataset", {}).get("benchmark"))
    source = target.spec.judge_source
    result = PanelResult(target.run_id)
    for entry in parse_panel(judge_group.get("panel")):
        if entry.protocol.mode not in benchmark.judge_modes:
            result.skipped[entry.label] = PanelSkip(f"{benchmark.title} cannot be graded with the "
                                                    f"{entry.protocol.mode} templates (they are LongMemEval's)", True)
            continue
        model = judge_model_settings(entry.model) if entry.model is not None else target.spec.judge_model
        missing = _missing_credentials(model)
        if missing:
            result.skipped[entry.label] = PanelSkip(missing, True)
            continue
        try:
            judge = panel_judge(entry, target.spec.judge_model, source)
        except OfficialTemplateError as error:
            # Without judge.source the pinned file is downloaded: offline it cannot be (by design); a given source
            # that does not load, or a download that is not the pinned file, is something to fix.
            where = "" if source is None else " from judge.source"
            by_design = source is None and not isinstance(error, TemplateHashMismatch)
            result.skipped[entry.label] = PanelSkip(f"the upstream templates could not be loaded{where}: {error}",
                                                    by_design)
            continue
        result.judges.append(target.grade(judge, concurrency, probes=probes))
        result.labels.append(entry.label)
    result.agreement = target.agreement()
    return result


@dataclass
class _Target:
    """A stored run opened for re-judging: its answers, their questions and the client to grade with."""

    results_dir: Path
    run_id: str
    config: dict[str, Any]
    spec: Any
    items: list[dict[str, Any]]
    answered: list[dict[str, Any]]
    questions: dict[str, Question]
    client: Any

    @classmethod
    def open(cls, results_dir: str | Path, run: str, overrides: Sequence[str], cache_dir: str | None) -> _Target:
        from om_eval.experiment.spec import spec_from_config
        from om_eval.llm import LLMClient
        from om_eval.llm.cache import ResponseCache
        from om_eval.report.detail import find_run
        from om_eval.store import Catalog

        with Catalog(results_dir, warn=False) as catalog:
            try:
                stored_run = dict(find_run(catalog.runs(), run))
            except LookupError as error:
                raise RejudgeError(str(error)) from None
            items = catalog.items([stored_run["run_id"]])
        stored = json.loads(stored_run["config_json"])
        config = judge_config(stored, overrides)
        answered = [i for i in items if i["status"] == "done" and i["hypothesis"] is not None]
        client = LLMClient(cache=ResponseCache(cache_dir or (stored.get("run") or {}).get("cache_dir")))
        return cls(Path(results_dir), stored_run["run_id"], config, spec_from_config(config), items, answered,
                   _questions(answered, stored), client)

    def grade(self, judge: Any, concurrency: int, *, probes: bool = False) -> RejudgeResult:
        """Grade every stored answer (and, with ``probes``, every probe) with ``judge``; stores the verdicts."""
        from dataclasses import asdict

        from om_eval.bench.pipeline import hypothesis_hash
        from om_eval.store import RunStore, store_path

        work = [(self.questions[i["question_id"]], i["hypothesis"]) for i in self.answered]
        graded = asyncio.run(_grade(work, judge, self.client, concurrency))
        result = RejudgeResult(self.run_id, judge.identity, skipped=len(self.items) - len(self.answered))
        rows = []
        calls: dict[str, list[Any]] = {}
        for (verdict, records), item in zip(graded, self.answered):
            qid = item["question_id"]
            result.judged += verdict.status == "ok"
            result.errors += verdict.status != "ok"
            if verdict.status != "ok" and result.first_error is None:
                result.first_error = verdict.error or f"judge status {verdict.status}"
            rows.append((qid, {**_verdict_columns(judge, verdict), "official": judge.is_official,
                               "hypothesis_hash": hypothesis_hash(item["hypothesis"])}))
            calls[qid] = [asdict(r) for r in records]
        with RunStore(store_path(self.results_dir, self.run_id)) as store:
            store.record_judgments(self.run_id, rows, calls=calls)
        if probes:
            result.probes, result.probe_errors, probe_error = self._grade_probes(judge, concurrency)
            result.first_error = result.first_error or probe_error
        return result

    def _grade_probes(self, judge: Any, concurrency: int) -> tuple[int, int, str | None]:
        from dataclasses import asdict

        from om_eval.bench.benchmark import benchmark_named
        from om_eval.bench.judging.probes import probes_for
        from om_eval.store import RunStore, store_path

        rubrics = benchmark_named(self.config.get("dataset", {}).get("benchmark")).unmatched_keys
        questions = [self.questions[i["question_id"]] for i in self.answered]
        pool = [(q.question_type, str(q.answer)) for q in questions if not q.is_abstention]
        work = [(q, probe) for q in questions
                for probe in probes_for(q, pool, rubric=q.question_type in rubrics)]
        graded = asyncio.run(_grade([(q, probe.text) for q, probe in work], judge, self.client, concurrency))
        rows = []
        calls: dict[str, list[Any]] = {}
        for (question, probe), (verdict, records) in zip(work, graded):
            rows.append((question.question_id, {**_verdict_columns(judge, verdict), "probe": probe.kind,
                                                "probe_text": probe.text, "expected": probe.expected}))
            calls.setdefault(question.question_id, []).extend(asdict(r) for r in records)
        with RunStore(store_path(self.results_dir, self.run_id)) as store:
            store.record_probes(self.run_id, rows, calls=calls)
        failed = [v.error or f"judge status {v.status}" for v, _ in graded if v.status != "ok"]
        return len(graded) - len(failed), len(failed), failed[0] if failed else None

    def agreement(self) -> list[Any]:
        from om_eval.report.agreement import run_agreement
        from om_eval.store import Catalog

        with Catalog(self.results_dir, warn=False) as catalog:
            return run_agreement(catalog, self.run_id)


def _verdict_columns(judge: Any, verdict: Any) -> dict[str, Any]:
    return {"judge_identity": json.dumps(judge.identity, sort_keys=True), "judge_mode": judge.mode,
            "judge_model": judge.model.model, "label": verdict.label, "status": verdict.status,
            "reply": verdict.reply, "error": verdict.error, "judged_at": datetime.now()}
