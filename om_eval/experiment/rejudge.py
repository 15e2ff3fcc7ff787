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


def judge_config(stored: Mapping[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """The stored run config with its judge changed by ``overrides`` (Hydra syntax).

    Raises:
        RejudgeError: an override touches something other than the judge, or names no judge change at all.
    """
    import yaml
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from om_eval.experiment.app import CONFIG_DIR
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
        register_configs()
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            composed = compose("config", overrides=groups)
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
    return OmegaConf.to_container(config, resolve=True)  # type: ignore[return-value]


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


async def _grade(items: Sequence[Mapping[str, Any]], questions: Mapping[str, Question], judge: Any,
                 client: Any, concurrency: int) -> list[tuple[str, Any, list[Any]]]:
    from om_eval.bench.judge import judge_answer
    from om_eval.llm.ledger import Ledger

    gate = asyncio.Semaphore(concurrency)

    async def one(item: Mapping[str, Any]) -> tuple[str, Any, list[Any]]:
        ledger = Ledger()
        async with gate:
            verdict = await judge_answer(judge, client.with_ledger(ledger), questions[item["question_id"]],
                                         item["hypothesis"])
        return item["question_id"], verdict, list(ledger.records)

    return list(await asyncio.gather(*(one(i) for i in items)))


def rejudge_run(results_dir: str | Path, run: str, overrides: Sequence[str], *, concurrency: int = 4,
                cache_dir: str | None = None) -> RejudgeResult:
    """Grade every answered question of ``run`` (an id, id prefix or label) with the judge ``overrides`` give.

    Raises:
        RejudgeError: bad overrides, or no run / several runs match.
        StoreBusyError: the run is being written (running or resumed elsewhere); wait for it to end.
    """
    from dataclasses import asdict

    from om_eval.bench.pipeline import hypothesis_hash
    from om_eval.experiment.job import make_judge
    from om_eval.experiment.spec import spec_from_config
    from om_eval.llm import LLMClient
    from om_eval.llm.cache import ResponseCache
    from om_eval.report.agreement import run_agreement
    from om_eval.report.detail import find_run
    from om_eval.store import Catalog, RunStore, store_path

    with Catalog(results_dir, warn=False) as catalog:
        try:
            stored_run = dict(find_run(catalog.runs(), run))
        except LookupError as error:
            raise RejudgeError(str(error)) from None
        items = catalog.items([stored_run["run_id"]])
    stored = json.loads(stored_run["config_json"])
    spec = spec_from_config(judge_config(stored, overrides))
    judge = make_judge(spec)
    answered = [i for i in items if i["status"] == "done" and i["hypothesis"] is not None]
    questions = _questions(answered, stored)
    client = LLMClient(cache=ResponseCache(cache_dir or (stored.get("run") or {}).get("cache_dir")))
    graded = asyncio.run(_grade(answered, questions, judge, client, concurrency))
    result = RejudgeResult(stored_run["run_id"], judge.identity, skipped=len(items) - len(answered))
    identity = json.dumps(judge.identity, sort_keys=True)
    rows = []
    calls: dict[str, list[Any]] = {}
    for (qid, verdict, records), item in zip(graded, answered):
        result.judged += verdict.status == "ok"
        result.errors += verdict.status != "ok"
        rows.append((qid, {"judge_identity": identity, "judge_mode": judge.mode, "judge_model": judge.model.model,
                           "official": judge.is_official, "hypothesis_hash": hypothesis_hash(item["hypothesis"]),
                           "label": verdict.label, "status": verdict.status, "reply": verdict.reply,
                           "error": verdict.error, "judged_at": datetime.now()}))
        calls[qid] = [asdict(r) for r in records]
    with RunStore(store_path(results_dir, stored_run["run_id"])) as store:
        store.record_judgments(stored_run["run_id"], rows, calls=calls)
    with Catalog(results_dir, warn=False) as catalog:
        result.agreement = run_agreement(catalog, stored_run["run_id"])
    return result
