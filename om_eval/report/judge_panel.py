"""The judge panel and judge quality of a run: how far its score moves across judges, and how good each judge is.

* :func:`panel_report`: every judge of the run (its own judge and those of ``om-eval rejudge``), with how many of
  the current answers it graded and failed on, its accuracy per category and overall, the range across judges, and
  the questions whose verdict flips from one judge to another, with each judge's reply. Only questions every judge
  graded count, so the judges are compared on the same answers; when a judge failed on some, the panel says on
  which share it compares and why, and shows each judge's accuracy on every answer it graded as well. A judge
  that graded none is listed (with its first error) and left out of the comparison.
* :func:`judge_quality`: after ``rejudge --probes``, each judge's false-accept rate (wrong probes it said yes to:
  a vague answer and a specific wrong one) and false-reject rate (gold probes it said no to), overall and per
  category (:mod:`om_eval.bench.judging.probes`).
* :func:`floor_line`: the judge-free floor (:mod:`om_eval.bench.judging.matching`) beside the judged accuracy.

A judge is named ``<protocol>:<model>`` (:func:`om_eval.report.agreement.judge_name`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from om_eval.bench.benchmark import Benchmark
from om_eval.bench.judging.matching import contains_match, match_floor
from om_eval.report._format import plural
from om_eval.report.agreement import clip, current_verdicts, judge_name, narrowing

__all__ = ["Flip", "JudgeQuality", "JudgeScores", "PanelReport", "floor_line", "judge_quality",
           "panel_markdown", "panel_report", "quality_markdown"]


@dataclass(frozen=True)
class JudgeScores:
    """One judge's accuracy on the questions every judge of the panel graded, and what it graded on its own."""

    label: str
    judge_key: str
    accuracy: float | None
    by_category: Mapping[str, float | None]
    own: bool
    """The run's own judge (the one its items were graded with)."""
    graded: int = 0
    """Current answers this judge graded."""
    failed: int = 0
    """Current answers this judge tried and failed to grade (a provider error, a reply with no verdict)."""
    accuracy_graded: float | None = None
    """Accuracy on every answer this judge graded (``accuracy`` is on the shared ones only)."""
    error: str | None = None
    """The first error among its failed answers."""


@dataclass(frozen=True)
class Flip:
    """A question whose verdict differs between judges: each judge's label and reply."""

    question_id: str
    question_type: str
    verdicts: Mapping[str, tuple[bool, str]]


@dataclass(frozen=True)
class PanelReport:
    run_id: str
    n: int
    """Questions every judge graded (the comparison's base)."""
    judges: tuple[JudgeScores, ...]
    """Every judge of the run, those that graded nothing included (with no accuracy)."""
    categories: tuple[str, ...]
    flips: tuple[Flip, ...]
    answers: int | None = None
    """Answers the run holds now (``n`` when not given)."""
    note: str = ""
    """Why ``n`` is smaller than ``answers``; empty when the judges are compared on every answer."""

    @property
    def total(self) -> int:
        return self.n if self.answers is None else self.answers

    @property
    def spread(self) -> float | None:
        """Largest minus smallest overall accuracy across judges (``None`` with fewer than two to compare)."""
        values = [j.accuracy for j in self.judges if j.accuracy is not None]
        return max(values) - min(values) if len(values) > 1 else None

    def category_spread(self, category: str) -> float | None:
        values = [v for j in self.judges if (v := j.by_category.get(category)) is not None]
        return max(values) - min(values) if len(values) > 1 else None


def _mean(values: Sequence[bool]) -> float | None:
    return sum(values) / len(values) if values else None


def panel_report(catalog: Any, run_id: str, benchmark: Benchmark) -> PanelReport | None:
    """The panel of ``run_id``, or ``None`` when it has fewer than two judges (graded or failed alike)."""
    found = current_verdicts(catalog, run_id)
    verdicts, labels, types, own = found.verdicts, found.names, found.types, found.own
    keys = sorted(labels, key=lambda k: (k != own, labels[k], k))
    if len(keys) < 2:
        return None
    # A judge that graded nothing would empty the shared set: it is listed, not compared.
    compared = [k for k in keys if verdicts.get(k)]
    shared = sorted(set.intersection(*(set(verdicts[k]) for k in compared))) if compared else []
    present = {types[q] for q in shared}
    categories = tuple(c for c in benchmark.category_keys if c in present)
    judges = []
    for key in keys:
        graded = {q: verdicts[key][q][0] for q in shared} if key in compared else {}
        judges.append(JudgeScores(
            labels[key], key, _mean(list(graded.values())),
            {c: _mean([v for q, v in graded.items() if types[q] == c]) for c in categories}, key == own,
            found.graded(key), found.failures(key), found.graded_accuracy(key), found.first_error(key),
        ))
    flips = tuple(
        Flip(q, types[q], {labels[k]: verdicts[k][q] for k in compared})
        for q in shared if len({verdicts[k][q][0] for k in compared}) > 1
    )
    idle = [f"{labels[k]} ({'failed on ' + str(found.failures(k)) if found.failures(k) else 'no verdict'})"
            for k in keys if k not in compared]
    note = narrowing(found, compared, len(shared), "all the others" if idle else "every judge")
    if idle:
        left_out = f"{', '.join(idle)} graded none and {'is' if len(idle) == 1 else 'are'} left out"
        note = f"{left_out}; {note or 'the others on the same ' + plural(len(shared), 'answer')}"
    return PanelReport(run_id, len(shared), tuple(judges), categories, flips, found.answers, note)


@dataclass(frozen=True)
class JudgeQuality:
    """One judge's verdicts on the probes (answers whose right verdict is known)."""

    label: str
    judge_key: str
    false_accept: float | None
    """Share of wrong probes (vague and specific) graded correct."""
    false_accept_vague: float | None
    false_accept_wrong: float | None
    false_reject: float | None
    """Share of gold probes graded wrong."""
    by_category: Mapping[str, tuple[float | None, float | None]]
    """Category -> (false accept, false reject)."""
    n_wrong: int
    n_gold: int
    errors: int
    """Probes without a verdict (left out of the rates)."""


def judge_quality(catalog: Any, run_id: str, benchmark: Benchmark) -> list[JudgeQuality]:
    """Each judge's probe rates for ``run_id`` (empty when no probes were graded)."""
    rows = catalog.query(
        "SELECT p.question_id, p.judge_key, p.judge_identity, p.probe, p.expected, p.label, p.status, "
        "i.question_type FROM probe_verdicts p JOIN items i ON i.run_id = p.run_id AND i.question_id = p.question_id "
        "WHERE p.run_id = ?", [run_id])
    by_judge: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_judge.setdefault(row["judge_key"], []).append(row)
    qualities = []
    for key, judged in by_judge.items():
        ok = [r for r in judged if r["status"] == "ok"]

        def accepted(kinds: tuple[str, ...], category: str | None = None, *, rows: list[dict[str, Any]] = ok
                     ) -> list[bool]:
            return [bool(r["label"]) for r in rows if r["probe"] in kinds
                    and (category is None or r["question_type"] == category)]

        wrong, gold = accepted(("vague", "wrong")), accepted(("gold",))
        present = {r["question_type"] for r in ok}
        qualities.append(JudgeQuality(
            judge_name(judged[0]["judge_identity"]), key, _mean(wrong), _mean(accepted(("vague",))),
            _mean(accepted(("wrong",))), _mean([not g for g in gold]),
            {c: (_mean(accepted(("vague", "wrong"), c)), _mean([not g for g in accepted(("gold",), c)]))
             for c in benchmark.category_keys if c in present},
            len(wrong), len(gold), len(judged) - len(ok),
        ))
    return sorted(qualities, key=lambda q: q.label)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def panel_markdown(panel: PanelReport, benchmark: Benchmark, *, max_flips: int = 20) -> str:
    """The panel as markdown: every judge with what it graded and failed on, accuracy per category on the shared
    answers, the range, then the flipped questions. When the shared answers are fewer than the run's, the heading
    says why and a last column gives each judge's accuracy on every answer it graded."""
    shorts = [benchmark.category(c).short for c in panel.categories]
    narrowed = bool(panel.note)
    if narrowed:
        heading = (f"Run {panel.run_id[:12]}: {len(panel.judges)} judges, {panel.note}. Accuracy % on the "
                   "answers compared, and in the last column on every answer the judge graded.")
    else:
        heading = (f"Run {panel.run_id[:12]}: {len(panel.judges)} judges on the same {plural(panel.n, 'answer')} "
                   "(accuracy %).")
    head = ["judge", "graded", "failed", *shorts, "overall", *(["all it graded"] if narrowed else [])]
    lines = [heading, "", "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for judge in panel.judges:
        name = judge.label + (" (run's judge)" if judge.own else "") + ("" if judge.graded else " (graded none)")
        cells = [name, str(judge.graded), str(judge.failed),
                 *(_pct(judge.by_category.get(c)) for c in panel.categories), _pct(judge.accuracy),
                 *([_pct(judge.accuracy_graded)] if narrowed else [])]
        lines.append("| " + " | ".join(cells) + " |")
    spread = ["**range**", "", "", *(_pct(panel.category_spread(c)) for c in panel.categories),
              f"**{_pct(panel.spread)}**", *([""] if narrowed else [])]
    lines.append("| " + " | ".join(spread) + " |")
    failing = [j for j in panel.judges if j.failed]
    if failing:
        lines.append("")
    for judge in failing:
        again = "" if judge.own else " (the same om-eval rejudge grades them again)"
        lines.append(f"- {judge.label} failed on {plural(judge.failed, 'answer')}: {clip(judge.error or '')}{again}")
    lines += ["", f"{len(panel.flips)} of {plural(panel.n, 'question')} flip between judges."]
    for flip in panel.flips[:max_flips]:
        said = "; ".join(f"{label}: {'yes' if label_ok else 'no'} ({reply.strip()[:60]!r})"
                         for label, (label_ok, reply) in flip.verdicts.items())
        lines.append(f"- {flip.question_id} ({flip.question_type}): {said}")
    if len(panel.flips) > max_flips:
        lines.append(f"- ... and {len(panel.flips) - max_flips} more (om-eval show RUN QUESTION prints every reply)")
    return "\n".join(lines) + "\n"


def quality_markdown(qualities: Sequence[JudgeQuality], benchmark: Benchmark) -> str:
    """The judge-quality table: false-accept and false-reject rates (%) per judge, overall and per category."""
    categories = [c for c in benchmark.category_keys if any(c in q.by_category for q in qualities)]
    shorts = [benchmark.category(c).short for c in categories]
    lines = ["Probe answers with a known verdict: FA = wrong answers accepted (vague / specific), FR = gold "
             "answers rejected (%).", "",
             "| judge | FA | FA vague | FA specific | FR | " + " | ".join(f"{s} FA/FR" for s in shorts) + " |",
             "|---" * (len(shorts) + 5) + "|"]
    for q in qualities:
        cells = [f"{_pct(q.by_category[c][0])}/{_pct(q.by_category[c][1])}" if c in q.by_category else "n/a"
                 for c in categories]
        errors = f" ({plural(q.errors, 'probe')} unjudged)" if q.errors else ""
        lines.append(f"| {q.label}{errors} | {_pct(q.false_accept)} | {_pct(q.false_accept_vague)} | "
                     f"{_pct(q.false_accept_wrong)} | {_pct(q.false_reject)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def floor_line(label: str, items: Sequence[Mapping[str, Any]], benchmark: Benchmark) -> str:
    """One line: the judge-free floor of a run's answers beside its judged accuracy on the same questions, and
    how many answers holding the gold the judge still graded wrong."""
    skip = benchmark.unmatched_keys
    floor = match_floor(items, skip=skip)
    checked = [i for i in items
               if not (i.get("is_abstention") or i.get("question_type") in skip or i.get("gold_answer") is None)]
    graded = [i for i in checked if i.get("judge_status") == "ok" and i.get("label") is not None]
    judged = _mean([bool(i["label"]) for i in graded])
    rejected = sum(1 for i in graded if not i["label"] and contains_match(i.get("hypothesis") or "", i["gold_answer"]))
    number = (f", number match {_pct(floor.number)}% of {plural(floor.numbered, 'numeric gold')}"
              if floor.numbered else "")
    return (f"{label}: gold found in the answer {_pct(floor.contains)}% (exact {_pct(floor.exact)}%{number}) of "
            f"{plural(floor.n, 'question')}, judged correct {_pct(judged)}%; {plural(rejected, 'answer')} holding "
            f"the gold judged wrong; {plural(floor.skipped, 'question')} without a gold to match (rubrics, "
            "unanswerable)")
