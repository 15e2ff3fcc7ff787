"""Can a run's score be set beside a published LongMemEval number? A verdict with the reason for each condition.

Published LongMemEval_S numbers come from the official protocol: the upstream judge templates at the pinned
commit, the ``'yes' in reply`` parse, ``gpt-4o-2024-08-06`` at temperature 0 with 10 tokens, all 500 questions
of a pinned data file, one answer per question. A run is *comparable* when every condition below holds; the
report names each one that fails:

1. **official templates**: the pinned upstream judge templates (not the house or lenient set, not another file);
2. **official parse**: ``'yes'`` anywhere in the reply, a reply without a verdict not counted wrong;
3. **official judge model**: ``gpt-4o-2024-08-06``, temperature 0, at most 10 tokens;
4. **whole file**: every question of the file answered and judged (500/500 on S), no subset;
5. **pinned data**: the data file's sha256 is one om-eval pins (cleaned S, M or oracle, or the original S);
6. **one prompt for every category**: the actor gets the same instructions whatever the question's category
   (om-eval has no per-category prompt; the condition names the prompt hash it checked);
7. **no re-runs kept for flips**: no question answered again after an answer of it was graded, whether seen as
   a verdict on an earlier answer or as a second fresh actor call that succeeded;
8. **both aggregates shown**: task-averaged (Mastra's headline) and micro (the paper's) accuracy, both always
   in om-eval's report, since vendors mix them;
9. **Mastra's own prompts**, for a run set beside Mastra's published numbers (a ``mastra*`` experiment): the models
   read ``@mastra/memory``'s own text (``prompt=mastra_exact``), not om-eval's paraphrase of it.

BEAM's paper scored with its own scripts (:data:`BEAM_PROTOCOL`): upstream's rubric and equivalence prompts at the
pinned commit, ``gpt-4.1-mini`` at temperature 0, item scores truncated with ``int()`` for nine abilities, every
question of a pinned tier, one answer per question. A run that holds them is scored as upstream scores; it still
differs from a published number in its reader (every om-eval run answers with ``models.actor``), and in what
upstream does with an undefined event-ordering score (NaN in its means; left out of om-eval's and counted). LoCoMo
has no official judge protocol (its vendors each use their own judge), so its runs are never comparable: the verdict
says so rather than pretend.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from om_eval.bench.benchmark import Benchmark
from om_eval.bench.judging.judge import OFFICIAL_JUDGE_MODEL, PINNED_SHA256
from om_eval.bench.pipeline import hypothesis_hash
from om_eval.data.loader import EXPECTED_COUNTS, LME_FILES
from om_eval.report._format import plural
from om_eval.report.departures import PARAPHRASE_REASON

__all__ = ["BEAM_PROTOCOL", "PROTOCOL", "Condition", "Verdict", "checklist_lines", "comparability",
           "comparability_markdown", "run_comparability", "verdict_lines"]

FULL_SIZE = sum(total for total, _ in EXPECTED_COUNTS.values())
PINNED_DATA = {f.sha256: f.filename for f in LME_FILES.values()}

#: The official protocol's conditions, in the order they are checked: (name, what it asks). The report prints
#: this list once; each run's verdict then names only the conditions it departs from.
PROTOCOL: tuple[tuple[str, str], ...] = (
    ("official templates", "the pinned upstream judge templates"),
    ("official parse", "'yes' anywhere in the reply; a reply without a verdict is unjudged, not wrong"),
    ("official judge model", f"{OFFICIAL_JUDGE_MODEL}, temperature 0, at most 10 output tokens"),
    ("whole file", f"every question of the file judged ({FULL_SIZE}/{FULL_SIZE} on S), no subset"),
    ("pinned data", "a data file whose sha256 om-eval pins"),
    ("one prompt for every category", "the actor gets the same instructions whatever the category"),
    ("no re-runs kept for flips", "no question answered again after an answer of it was graded"),
    ("both aggregates shown", "task-averaged and micro accuracy both reported"),
    ("Mastra's own prompts", "a run set beside Mastra's published numbers (a mastra* experiment) reads "
                             "@mastra/memory's own prompt text (prompt=mastra_exact)"),
)


#: BEAM's conditions (``src/evaluation/run_evaluation.py`` and ``report_results.py`` at the pinned commit).
BEAM_PROTOCOL: tuple[tuple[str, str], ...] = (
    ("BEAM's judge prompts", "upstream's rubric and equivalence prompts read from the pinned commit (judge=official)"),
    ("BEAM's judge model", "gpt-4.1-mini at temperature 0, as upstream's evaluation script calls it"),
    ("upstream rounding", "each rubric item's score truncated with int() for nine abilities (beam.rounding=upstream), "
                          "as upstream's script adds them"),
    ("whole tier", "every question of the tier judged, no subset"),
    ("pinned data", "the tier's files as the pinned commit has them"),
    ("no re-runs kept for flips", "no question answered again after an answer of it was graded"),
)


@dataclass(frozen=True)
class Condition:
    name: str
    holds: bool
    detail: str


@dataclass(frozen=True)
class Verdict:
    run_id: str
    label: str
    conditions: tuple[Condition, ...]
    benchmark: str = "LongMemEval"
    """The title of the benchmark whose published numbers the run is held against."""

    @property
    def comparable(self) -> bool:
        return bool(self.conditions) and all(c.holds for c in self.conditions)

    @property
    def failed(self) -> tuple[Condition, ...]:
        return tuple(c for c in self.conditions if not c.holds)


def _judge_conditions(identity: Mapping[str, Any], judge_model: Mapping[str, Any]) -> list[Condition]:
    mode, sha = identity.get("mode"), identity.get("template_sha256")
    if mode == "official" and sha == PINNED_SHA256:
        templates = Condition("official templates", True, f"upstream templates, pinned file sha256 {sha[:12]}")
    elif mode == "official":
        templates = Condition("official templates", False, f"upstream-layout templates from another file (sha256 "
                                                           f"{str(sha)[:12]}, pinned {PINNED_SHA256[:12]})")
    else:
        templates = Condition("official templates", False, f"the {mode} templates (om-eval's own words)")
    parse, no_verdict = identity.get("parse", "official"), identity.get("no_verdict", "error")
    parse_ok = parse == "official" and no_verdict == "error"
    parse_detail = ("'yes' anywhere in the reply" if parse == "official"
                    else "Mastra's parse (the reply must be 'yes' or start 'yes.')")
    if no_verdict != "error":
        parse_detail += "; a reply without a verdict counted wrong"
    model = str(judge_model.get("model", identity.get("model", "")))
    temperature, tokens = judge_model.get("temperature"), judge_model.get("max_output_tokens")
    model_ok = model.split("/")[-1] == OFFICIAL_JUDGE_MODEL and temperature == 0 and tokens == 10
    return [
        templates,
        Condition("official parse", parse_ok, parse_detail),
        Condition("official judge model", model_ok, f"{model}, {_sampling(temperature, tokens)}"),
    ]


def _sampling(temperature: Any, tokens: Any) -> str:
    """``temperature 0, at most 10 output tokens``; an unset value is said in words, never printed as ``None``."""
    if temperature is None:
        heat = "temperature not set"
    else:
        heat = f"temperature {temperature:g}" if isinstance(temperature, (int, float)) else f"temperature {temperature}"
    cap = "no output cap" if tokens is None else f"at most {plural(int(tokens), 'output token')}"
    return f"{heat}, {cap}"


def comparability(run: Mapping[str, Any], items: Sequence[Mapping[str, Any]], benchmark: Benchmark, *,
                  regraded: int = 0, reanswered: int = 0) -> Verdict:
    """The verdict of one run from its ``runs`` row and ``items`` rows.

    ``regraded``: questions with a verdict on an answer other than the stored one; ``reanswered``: questions
    with more than one fresh successful actor call (:func:`run_comparability` counts both from the store).
    """
    label = run.get("label") or run["run_id"][:8]
    if benchmark.name == "beam":
        return Verdict(run["run_id"], label, tuple(_beam_conditions(run, items, regraded, reanswered)), "BEAM")
    if benchmark.name != "longmemeval":
        return Verdict(run["run_id"], label, (Condition(
            "an official protocol exists", False,
            f"{benchmark.title} has no official judge protocol: published numbers each use their own judge"),),
            benchmark.title)
    config = json.loads(run["config_json"]) if isinstance(run.get("config_json"), str) else (run.get("config_json")
                                                                                           or {})
    identity = json.loads(run["judge_identity"]) if run.get("judge_identity") else {}
    conditions = _judge_conditions(identity, (config.get("models") or {}).get("judge") or {})
    judged = sum(1 for i in items if i.get("status") == "done" and i.get("judge_status") == "ok")
    # The seed only picks a sample; alone it selects nothing.
    subset = {k: v for k, v in ((config.get("dataset") or {}).get("subset") or {}).items()
              if k != "seed" and v not in (None, [], {})}
    whole = judged == FULL_SIZE and not subset
    conditions.append(Condition("whole file", whole, f"{judged}/{FULL_SIZE} questions judged"
                                + (f"; subset {json.dumps(subset, sort_keys=True)}" if subset else "")))
    sha = run.get("dataset_sha256") or ""
    conditions.append(Condition(
        "pinned data", sha in PINNED_DATA,
        f"{PINNED_DATA[sha]} (sha256 {sha[:12]})" if sha in PINNED_DATA
        else f"{run.get('dataset_name') or 'a file'} with sha256 {sha[:12] or 'unknown'}, "
             "not a pinned LongMemEval file"))
    prompts = json.loads(run["prompt_hashes"]) if run.get("prompt_hashes") else {}
    conditions.append(Condition("one prompt for every category", True,
                                "om-eval sends every category the same actor instructions"
                                + (f" (prompt set {next(iter(prompts.values()))})" if prompts else "")))
    conditions.append(_rerun_condition(regraded, reanswered))
    conditions.append(Condition("both aggregates shown", True, "task-averaged and micro accuracy both reported"))
    if str(config.get("experiment") or "").startswith("mastra") and "om" in prompts:  # an OM run (not a reader)
        conditions.append(_prompt_condition(prompts))
    return Verdict(run["run_id"], label, tuple(conditions))


def _rerun_condition(regraded: int, reanswered: int) -> Condition:
    reruns = []
    if regraded:
        reruns.append(f"{plural(regraded, 'question')} {'has' if regraded == 1 else 'have'} a verdict on an "
                      "earlier answer")
    if reanswered:
        reruns.append(f"{plural(reanswered, 'question')} {'was' if reanswered == 1 else 'were'} answered afresh "
                      "more than once")
    return Condition("no re-runs kept for flips", not reruns, "; ".join(reruns) or "one answer per question")


def _beam_conditions(run: Mapping[str, Any], items: Sequence[Mapping[str, Any]], regraded: int,
                     reanswered: int) -> list[Condition]:
    """:data:`BEAM_PROTOCOL` checked against a run."""
    from om_eval.bench.judging.beam_templates import PINNED_RUBRIC_SHA256
    from om_eval.bench.judging.rubric import is_beam_judge_model
    from om_eval.data.beam import pinned_tier_questions, pinned_tier_sha256

    config = json.loads(run["config_json"]) if isinstance(run.get("config_json"), str) else (run.get("config_json")
                                                                                           or {})
    identity = json.loads(run["judge_identity"]) if run.get("judge_identity") else {}
    official = identity.get("mode") == "beam-official" and identity.get("template_sha256") == PINNED_RUBRIC_SHA256
    model = (config.get("models") or {}).get("judge") or {}
    name, temperature = str(model.get("model", identity.get("model", ""))), model.get("temperature")
    rounding = identity.get("rounding", "upstream")
    dataset = config.get("dataset") or {}
    tier = str(dataset.get("tier") or "100K")
    judged = sum(1 for i in items if i.get("status") == "done" and i.get("judge_status") == "ok")
    subset = {k: v for k, v in (dataset.get("subset") or {}).items() if k != "seed" and v not in (None, [], {})}
    expected = pinned_tier_questions(tier) or (0 if subset else int(run.get("n_questions") or 0))
    pinned = pinned_tier_sha256(tier)
    sha = str(run.get("dataset_sha256") or "")
    return [
        Condition("BEAM's judge prompts", official, "upstream's prompts at the pinned commit" if official else
                  f"the {str(identity.get('mode', '?')).removeprefix('beam-')} prompts (om-eval's own words)"
                  if identity.get("mode") != "beam-official" else "upstream-layout prompts from another file"),
        Condition("BEAM's judge model", is_beam_judge_model(name) and temperature == 0,
                  f"{name}, {_sampling(temperature, model.get('max_output_tokens'))}"),
        Condition("upstream rounding", rounding == "upstream", f"beam.rounding={rounding}"),
        Condition("whole tier", not subset and judged == expected and expected > 0,
                  f"{judged}/{expected} questions of tier {tier} judged"
                  + (f"; subset {json.dumps(subset, sort_keys=True)}" if subset else "")),
        Condition("pinned data", pinned is not None and sha == pinned,
                  f"tier {tier} as pinned (sha256 {sha[:12]})" if pinned is not None and sha == pinned else
                  f"tier {tier} with digest {sha[:12] or 'unknown'}, not the pinned "
                  f"{pinned[:12] if pinned else 'one (none is pinned by sha256 for this tier)'}"),
        _rerun_condition(regraded, reanswered),
    ]


def _prompt_condition(prompts: Mapping[str, Any]) -> Condition:
    """Whose words a run set beside Mastra's published numbers read: the provenance names the package, or it is
    om-eval's paraphrase (``runs.prompt_hashes``)."""
    if prompts.get("package"):
        return Condition("Mastra's own prompts", True,
                         f"{prompts['package']} {prompts.get('version')} ({prompts.get('variant')}), integrity "
                         f"{str(prompts.get('integrity'))[:19]}…")
    return Condition("Mastra's own prompts", False, f"{PARAPHRASE_REASON} (prompt=mastra_exact reads Mastra's own)")


def run_comparability(catalog: Any, run: Mapping[str, Any], benchmark: Benchmark) -> Verdict:
    """:func:`comparability` of a stored run, counting re-graded and re-answered questions from the store."""
    run_id = run["run_id"]
    items = catalog.query("SELECT question_id, status, judge_status, hypothesis FROM items WHERE run_id = ?", [run_id])
    current = {i["question_id"]: hypothesis_hash(i["hypothesis"]) for i in items if i["hypothesis"] is not None}
    graded = catalog.query("SELECT DISTINCT question_id, hypothesis_hash FROM judgments WHERE run_id = ?", [run_id])
    regraded = len({g["question_id"] for g in graded if g["question_id"] in current
                    and g["hypothesis_hash"] != current[g["question_id"]]})
    answered = catalog.query("SELECT question_id, count(*) AS n FROM llm_calls WHERE run_id = ? AND stage = 'actor' "
                             "AND error IS NULL AND NOT coalesce(cached, false) GROUP BY question_id", [run_id])
    reanswered = sum(1 for row in answered if row["n"] > 1)
    return comparability(run, items, benchmark, regraded=regraded, reanswered=reanswered)


def checklist_lines(protocol: Sequence[tuple[str, str]] = PROTOCOL) -> list[str]:
    """Markdown lines: a protocol's conditions (LongMemEval's :data:`PROTOCOL` by default), numbered, printed once
    per report."""
    return [f"{i}. **{name}**: {asks}" for i, (name, asks) in enumerate(protocol, 1)]


def verdict_lines(verdict: Verdict, *alike: Verdict) -> list[str]:
    """Markdown lines: the verdict, then each condition the run departs from with what was found (the conditions
    it meets are not repeated: :func:`checklist_lines` lists them once). ``alike``: further runs with the very same
    verdict, named on the same line."""
    failed = verdict.failed
    names = ", ".join(f"**{v.label}** ({v.run_id[:8]})" for v in (verdict, *alike))
    if verdict.comparable and verdict.benchmark == "BEAM":
        return [f"- {names}: scored as upstream's BEAM scripts score (meets every condition)"]
    if verdict.comparable:
        return [f"- {names}: comparable with published {verdict.benchmark} numbers (meets every condition)"]
    lines = [f"- {names}: not comparable; {'each ' if alike else ''}departs from "
             f"{plural(len(failed), 'condition')}:"]
    lines += [f"  - ✗ {condition.name}: {condition.detail}" for condition in failed]
    return lines


def _alike(verdict: Verdict) -> tuple[Any, ...]:
    """What two runs must share to be listed as one: benchmark and every failed condition with its finding."""
    return verdict.benchmark, verdict.comparable, tuple((c.name, c.detail) for c in verdict.failed)


def comparability_markdown(verdicts: Sequence[Verdict], budgets: Sequence[str] = ()) -> str:
    """The report's section: the protocol's conditions once, then one verdict per run.

    ``budgets``: the lines that say which runs compared here had different memory budgets
    (:func:`om_eval.report.systems.budget_warnings`), printed after the checklist.
    """
    lines = ["## Comparability with published numbers", ""]
    protocols = {"LongMemEval": PROTOCOL, "BEAM": BEAM_PROTOCOL}
    # One checklist per benchmark shown, in run order (LongMemEval's when there is no run to say).
    for title in dict.fromkeys(v.benchmark for v in verdicts) or ("LongMemEval",):
        if title == "BEAM":
            lines += ["A BEAM run is scored as upstream's scripts score when it meets every condition below (checked "
                      "in om_eval/report/comparability.py). Its reader is still om-eval's (models.actor), and an "
                      "undefined event-ordering score is left out of its means where upstream's would be NaN; "
                      "vendors' published numbers name neither their reader nor their judge.", "",
                      *checklist_lines(protocols[title]), ""]
        elif title in protocols:
            lines += [f"A run is comparable with published {title} numbers when it meets every condition of the "
                      "official protocol (checked in om_eval/report/comparability.py):", "",
                      *checklist_lines(protocols[title]), ""]
    if budgets:
        lines += [*(f"⚠ {line}" for line in budgets), ""]
    groups: dict[tuple[Any, ...], list[Verdict]] = {}
    for verdict in verdicts:
        groups.setdefault(_alike(verdict), []).append(verdict)
    for first, *alike in groups.values():
        lines += verdict_lines(first, *alike)
    return "\n".join(lines) + "\n"
