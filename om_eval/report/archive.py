"""The archive ``om-eval export`` writes (:mod:`om_eval.report.export`): its members' names and layout, the state of
its run, and the checks it passes before it is re-scored.

**An archive proves itself before it is re-scored.** :func:`rescore_archive` refuses (:class:`ArchiveError`, naming
the member) an archive that holds a member twice or lacks one, whose members do not match their sha256 in
``hashes.json``, whose ``hashes.json`` names another run or other data, prompts or judge than ``run.json``, or
whose answers do not cover the questions ``state.json`` and ``run.json`` say they do. The hashes catch an edit
that leaves them alone; the checks below also catch an edit that rewrote them. Scores the benchmark computes
itself (LoCoMo's F1) are recomputed from each answer and its gold with the functions the run used, and must equal
the stored ones; a verdict cannot be recomputed without the judge model, but it must equal the run judge's verdict
in ``verdicts.jsonl`` on the same reply. The metrics are then recomputed from ``answers.jsonl`` alone
(:func:`om_eval.bench.scoring.run_metrics`: LongMemEval's arithmetic, and LoCoMo's F1 aggregation where the
benchmark has its own score) and must equal ``metrics.json``. A partial archive is refused too, unless
``partial=True``: its metrics then carry ``partial`` (its state).

Before any member is read, its names and declared sizes are checked: only the members an export writes, and at
most :data:`MAX_ARCHIVE_BYTES` in all. Every answer, verdict and call row names its run, which must be the run of
``run.json``, so another run's answers moved into an archive (with ``hashes.json`` rewritten) are refused.

None of this proves who made an archive: someone who rewrites every member consistently, run ids included, makes a
consistent archive. It does prove that an archive is what an export wrote, or that it was changed.
"""

from __future__ import annotations

import hashlib
import json
import math
import zipfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from om_eval.bench.benchmark import Benchmark, benchmark_of_run
from om_eval.bench.pipeline import hypothesis_hash
from om_eval.bench.scoring import run_metrics
from om_eval.data.records import Question

__all__ = ["ANSWER_COLUMNS", "REQUIRED_MEMBERS", "ArchiveError", "RunProgress", "UnfinishedRunError", "archive_bytes",
           "archive_state", "rescore_archive"]

#: Item columns kept in ``answers.jsonl`` (the actor's compressed prompt and the evidence trace stay in the store).
ANSWER_COLUMNS = (
    "run_id", "question_id", "question_type", "is_abstention", "haystack_id", "question", "question_date",
    "gold_answer", "corrected_answer", "hypothesis", "status", "error", "label", "judge_status", "judge_reply", "score",
    "corrected_score", "corrected_label", "actor_prompt_tokens", "actor_completion_tokens", "observation_tokens",
    "history_tokens", "reused_memory", "cost_usd", "unknown_cost_calls", "actor_prompt_hash",
)
#: Members every archive holds (besides the official evaluation file, named after the judge model).
REQUIRED_MEMBERS = ("README.md", "hashes.json", "run.json", "state.json", "config.json", "answers.jsonl",
                    "verdicts.jsonl", "probes.jsonl", "calls.jsonl", "metrics.json", "hypotheses.jsonl")
#: Most bytes an archive's members may hold once decompressed, read from its directory before any member is read: a
#: 500-question run's archive is a few megabytes, and a "zip bomb" (gigabytes of zeros in a small file) is refused
#: without decompressing it.
MAX_ARCHIVE_BYTES = 1 << 30
PARTIAL_SUFFIX = "-partial"
EVAL_RESULTS_PREFIX = "hypotheses.jsonl.eval-results-"
MEMBER_TIME = (1980, 1, 1, 0, 0, 0)
_NO_DATE = datetime(1970, 1, 1)


class ArchiveError(ValueError):
    """An archive that cannot be re-scored as it is: changed after export, incomplete, or partial."""


@dataclass(frozen=True)
class RunProgress:
    """How far a run got: its questions done, failed (``error``) and not tried yet, and whether a job writes it."""

    run_id: str
    label: str
    questions: int
    """The questions the run was started on (``runs.n_questions``)."""
    done: int
    error: int
    running: bool = False
    """A job holds the run's file open (the counts are those of its last finished question)."""

    @property
    def pending(self) -> int:
        return max(self.questions - self.done - self.error, 0)

    @property
    def finished(self) -> bool:
        """Every question done."""
        return self.pending == 0 and self.error == 0

    @property
    def state(self) -> str:
        """``finished``, ``running`` (a job is writing it), ``unfinished`` (questions never tried: it was stopped)
        or ``failed`` (every question tried, some failed)."""
        if self.finished:
            return "finished"
        if self.running:
            return "running"
        return "unfinished" if self.pending else "failed"

    def counts(self) -> str:
        """``3 of 7 questions done, 4 pending, 0 error``."""
        return f"{self.done} of {self.questions} questions done, {self.pending} pending, {self.error} error"

    def describe(self, *, exported: bool = False) -> str:
        """``run 1825af23d1e0a5b7 (smoke) is unfinished: 3 of 7 questions done, 4 pending, 0 error``; with
        ``exported``, ``... was unfinished when exported: ...``."""
        state = (_PAST if exported else _PRESENT)[self.state]
        return f"run {self.run_id[:16]} ({self.label}) {state}: {self.counts()}"

    def as_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "state": self.state, "questions": self.questions, "done": self.done,
                "error": self.error, "pending": self.pending}


_PRESENT = {"finished": "is finished", "running": "is still running", "unfinished": "is unfinished",
            "failed": "has failed questions"}
_PAST = {"finished": "was finished", "running": "was running when exported",
         "unfinished": "was unfinished when exported", "failed": "had failed questions when exported"}


class UnfinishedRunError(RuntimeError):
    """``export_run`` of a run that is not finished, without ``partial=True``; nothing was written."""

    def __init__(self, progress: RunProgress) -> None:
        self.progress = progress
        super().__init__(f"{progress.describe()}; nothing written (--partial exports it as a partial archive)")


def as_jsonl_bytes(rows: Iterable[Mapping[str, Any]]) -> bytes:
    return "".join(json.dumps(dict(r), ensure_ascii=False, sort_keys=True, default=str) + "\n"
                   for r in rows).encode("utf-8")


def as_json_bytes(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False, sort_keys=True, indent=1, default=str) + "\n").encode("utf-8")


def run_identity(run: Mapping[str, Any]) -> dict[str, Any]:
    """What ``hashes.json`` says of the run besides its members' hashes: derived from ``run.json`` alone, so the two
    can be checked against each other."""
    identity = json.loads(run["judge_identity"]) if run.get("judge_identity") else {}
    return {"run_id": run.get("run_id"), "dataset_sha256": run.get("dataset_sha256"),
            "prompts": json.loads(run["prompt_hashes"]) if run.get("prompt_hashes") else {},
            "judge_templates_sha256": identity.get("template_sha256"), "judge_identity": identity}


def run_progress(run: Mapping[str, Any], answers: Sequence[Mapping[str, Any]], running: bool = False) -> RunProgress:
    statuses = Counter(a.get("status") for a in answers)
    expected = run.get("n_questions")
    return RunProgress(str(run["run_id"]), str(run.get("label") or run.get("experiment") or "?"),
                       int(expected) if isinstance(expected, int) else len(answers), statuses["done"],
                       statuses["error"], running)


def rescore_archive(path: str | Path, *, partial: bool = False) -> dict[str, Any]:
    """The metrics of an archive, recomputed from its answers once the archive has proved itself (see the module
    docstring for every check).

    Args:
        partial: re-score an archive of an unfinished or failed run; its metrics then carry ``partial``, the
            run's state when exported (``{"state": "unfinished", "questions": 7, "done": 3, ...}``).

    Raises:
        ArchiveError: naming the member (and the question) that fails a check, or saying that the archive is
            partial.
    """
    where = Path(path).name
    members = _members(path, where)
    hashes = _verify_hashes(members, where)
    run = _json_member(members, "run.json", where)
    _verify_identity(run, hashes, where)
    answers = _answers(members, where)
    verdicts = _jsonl_member(members, "verdicts.jsonl", where)
    for name, rows in (("answers.jsonl", answers), ("verdicts.jsonl", verdicts),
                       ("calls.jsonl", _jsonl_member(members, "calls.jsonl", where))):
        _verify_run_of_rows(run, name, rows, where)
    progress = _verify_state(run, answers, _json_member(members, "state.json", where), where)
    if not progress.finished and not partial:
        raise ArchiveError(f"{where} is a partial archive: {progress.describe(exported=True)}; "
                           "rescore_archive(path, partial=True) re-scores the questions it holds")
    benchmark = benchmark_of_run(run)
    _verify_scores(benchmark, answers, where)
    _verify_labels(run, answers, verdicts, where)
    judged = [{**a, "status": a["judge_status"]} for a in answers if a["status"] == "done"]
    metrics = run_metrics(benchmark, judged) if judged else {}
    stored = _json_member(members, "metrics.json", where)
    if not isinstance(stored, dict) or stored.get("benchmark") != benchmark.name:
        raise ArchiveError(f"{where}: member metrics.json does not name the run's benchmark ({benchmark.name})")
    if as_json_bytes(stored.get("metrics")) != as_json_bytes(metrics):
        raise ArchiveError(f"{where}: member metrics.json differs from the metrics recomputed from answers.jsonl")
    return metrics if progress.finished else {**metrics, "partial": progress.as_json()}


def archive_state(path: str | Path) -> dict[str, Any]:
    """The ``state.json`` of an archive (how far its run got when exported), unverified: see :func:`rescore_archive`."""
    with zipfile.ZipFile(path) as archive:
        return json.loads(archive.read("state.json"))


def _members(path: str | Path, where: str) -> dict[str, bytes]:
    """Every member by name; refuses a file that is not a zip, a member stored twice and a damaged member."""
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            _check_directory(infos, where)
            names = Counter(info.filename for info in infos)
            for name, count in names.items():
                if count > 1:
                    raise ArchiveError(f"{where}: member {name} appears {count} times; an archive holds each member "
                                       "once (which one was exported cannot be told)")
            members = {}
            for info in infos:
                try:
                    members[info.filename] = archive.read(info)
                except (zipfile.BadZipFile, OSError, EOFError) as error:
                    raise ArchiveError(f"{where}: member {info.filename} is damaged ({error})") from None
    except (zipfile.BadZipFile, OSError) as error:
        raise ArchiveError(f"{where}: not a readable zip archive ({error})") from None
    return members


def _check_directory(infos: Sequence[zipfile.ZipInfo], where: str) -> None:
    """Names and declared sizes, from the zip's directory alone: nothing is decompressed. (A member cannot hold more
    than it declares: zipfile stops there, and the checksum then fails.)"""
    for info in infos:
        name = info.filename
        if name not in REQUIRED_MEMBERS and not (name.startswith(EVAL_RESULTS_PREFIX) and "/" not in name):
            raise ArchiveError(f"{where}: member {name} is not one an export writes (its members are "
                               f"{', '.join(REQUIRED_MEMBERS)} and {EVAL_RESULTS_PREFIX}<judge model>)")
    total = sum(info.file_size for info in infos)
    if total > MAX_ARCHIVE_BYTES:
        largest = max(infos, key=lambda info: info.file_size)
        raise ArchiveError(f"{where}: its members would decompress to {total:,} bytes (member {largest.filename}: "
                           f"{largest.file_size:,}), over the {MAX_ARCHIVE_BYTES:,} an export ever needs; nothing was "
                           "read")


def _verify_run_of_rows(run: Mapping[str, Any], name: str, rows: Sequence[Mapping[str, Any]], where: str) -> None:
    """Every row names the run of ``run.json``: another run's rows cannot pass for this one's."""
    for number, row in enumerate(rows, 1):
        found = row.get("run_id")
        if found != run.get("run_id"):
            said = ("names no run (archives exported before rows carried their run id are not re-scored; export the "
                    "run again)") if found is None else f"is of run {found}, not of run {run.get('run_id')}"
            raise ArchiveError(f"{where}: member {name}, row {number} {said}")


def _json_member(members: Mapping[str, bytes], name: str, where: str) -> Any:
    try:
        return json.loads(members[name])
    except KeyError:
        raise ArchiveError(f"{where}: member {name} is missing") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise ArchiveError(f"{where}: member {name} is not JSON ({error})") from None


def _jsonl_member(members: Mapping[str, bytes], name: str, where: str) -> list[dict[str, Any]]:
    if name not in members:
        raise ArchiveError(f"{where}: member {name} is missing")
    rows = []
    for number, line in enumerate(members[name].decode("utf-8", "replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as error:
            raise ArchiveError(f"{where}: member {name}, line {number}: not JSON ({error})") from None
        if not isinstance(row, dict):
            raise ArchiveError(f"{where}: member {name}, line {number}: not a JSON object")
        rows.append(row)
    return rows


def _verify_hashes(members: Mapping[str, bytes], where: str) -> dict[str, Any]:
    """Every member but ``hashes.json`` is listed there with its sha256, and matches it; nothing listed is missing."""
    hashes = _json_member(members, "hashes.json", where)
    files = hashes.get("files") if isinstance(hashes, dict) else None
    if not isinstance(files, dict) or "run_id" not in hashes:
        raise ArchiveError(f"{where}: member hashes.json lacks the run id or the members' sha256 (an archive "
                           "written before archives carried both cannot be verified: export the run again)")
    for name in files:
        if name not in members:
            raise ArchiveError(f"{where}: member {name} is listed in hashes.json but missing")
    for name in REQUIRED_MEMBERS:
        if name not in members:
            raise ArchiveError(f"{where}: member {name} is missing")
    official = [name for name in members if name.startswith(EVAL_RESULTS_PREFIX)]
    if len(official) != 1:
        raise ArchiveError(f"{where}: member {EVAL_RESULTS_PREFIX}<judge model> is missing" if not official else
                           f"{where}: members {', '.join(official)}: an archive holds one judge's evaluation file")
    for name in members:
        if name not in REQUIRED_MEMBERS and name not in official:
            raise ArchiveError(f"{where}: member {name} is not one an export writes")
    for name, data in members.items():
        if name == "hashes.json":
            continue
        if name not in files:
            raise ArchiveError(f"{where}: member {name} is not listed in hashes.json (added after export)")
        if hashlib.sha256(data).hexdigest() != files[name]:
            raise ArchiveError(f"{where}: member {name} does not match its sha256 in hashes.json (changed after "
                               "export)")
    return hashes


def _verify_identity(run: Any, hashes: Mapping[str, Any], where: str) -> None:
    """``hashes.json`` names the run of ``run.json``, with its data, prompts and judge."""
    if not isinstance(run, dict) or not run.get("run_id"):
        raise ArchiveError(f"{where}: member run.json has no run id")
    try:
        expected = run_identity(run)
    except ValueError as error:
        raise ArchiveError(f"{where}: member run.json holds unreadable hashes ({error})") from None
    for key, value in expected.items():
        if hashes.get(key) != value:
            raise ArchiveError(f"{where}: member hashes.json gives {key} {hashes.get(key)!r}, run.json "
                               f"{value!r}: they describe different runs")


_ANSWER_KEYS = ("question_id", "question_type", "status", "hypothesis", "gold_answer", "label", "judge_status",
                "score")


def _answers(members: Mapping[str, bytes], where: str) -> list[dict[str, Any]]:
    """The rows of ``answers.jsonl``, each an answer with the columns re-scoring reads, each question once."""
    answers = _jsonl_member(members, "answers.jsonl", where)
    seen: set[str] = set()
    for number, answer in enumerate(answers, 1):
        missing = [key for key in _ANSWER_KEYS if key not in answer]
        if missing or not isinstance(answer["question_id"], str) or answer["status"] not in ("done", "error"):
            what = f"no {', '.join(missing)}" if missing else "a bad question id or status"
            raise ArchiveError(f"{where}: member answers.jsonl, answer {number}: not an answer ({what})")
        if answer["question_id"] in seen:
            raise ArchiveError(f"{where}: member answers.jsonl holds question {answer['question_id']} twice")
        seen.add(answer["question_id"])
    return answers


def _verify_state(run: Mapping[str, Any], answers: list[dict[str, Any]], state: Any, where: str) -> RunProgress:
    """The run's progress as ``answers.jsonl`` shows it, which must be what ``state.json`` recorded at export."""
    expected = run.get("n_questions")
    if isinstance(expected, int) and len(answers) > expected:
        raise ArchiveError(f"{where}: member answers.jsonl holds {len(answers)} questions; run.json says the run has "
                           f"{expected}")
    progress = run_progress(run, answers, running=isinstance(state, dict) and state.get("state") == "running")
    keys = ("questions", "done", "error")
    recorded = [state.get(key) for key in keys] if isinstance(state, dict) else None
    if recorded != [progress.questions, progress.done, progress.error]:
        said = ", ".join(f"{key} {value}" for key, value in zip(keys, recorded)) if recorded else "nothing readable"
        raise ArchiveError(f"{where}: member answers.jsonl holds {progress.counts()}, but state.json recorded "
                           f"{said} at export: answers were removed or added")
    return progress


def _question(answer: Mapping[str, Any]) -> Question:
    """Enough of a question for a benchmark's own scorer (it reads the category; the gold is passed apart)."""
    return Question(question_id=answer["question_id"], question_type=str(answer["question_type"]),
                    question=str(answer.get("question") or ""), answer=str(answer.get("gold_answer") or ""),
                    question_date=_NO_DATE, question_date_text=str(answer.get("question_date") or ""), sessions=(),
                    answer_session_ids=(), abstention=answer.get("is_abstention"))


def _same(stored: Any, recomputed: float | None) -> bool:
    if stored is None or recomputed is None:
        return stored is None and recomputed is None
    if isinstance(stored, float) and math.isnan(stored):
        return math.isnan(recomputed)
    return isinstance(stored, (int, float)) and math.isclose(stored, recomputed, rel_tol=1e-9, abs_tol=1e-12)


def _verify_scores(benchmark: Benchmark, answers: list[dict[str, Any]], where: str) -> None:
    """Every answer's own score (and corrected score) is the benchmark's score of its answer against its gold."""
    for answer in answers:
        if answer["status"] != "done":
            continue
        question, hypothesis = _question(answer), answer.get("hypothesis")
        corrected = answer.get("corrected_answer")
        if benchmark.reply_score is not None:  # its judge scores: the score follows from the judge's reply
            recomputed = benchmark.reply_score(str(answer["question_type"]), answer.get("judge_reply"))
            if answer.get("judge_status") == "ok" and not _same(answer.get("score"), recomputed):
                raise ArchiveError(f"{where}: member answers.jsonl, question {answer['question_id']}: score "
                                   f"{answer.get('score')!r} differs from {benchmark.own_score} recomputed from its "
                                   f"judge reply ({recomputed!r})")
            continue
        try:
            checks = (("score", benchmark.score(question, hypothesis)),
                      ("corrected_score", None if corrected is None else benchmark.score(question, hypothesis,
                                                                                         str(corrected))))
        except (ValueError, KeyError, TypeError) as error:
            raise ArchiveError(f"{where}: member answers.jsonl, question {answer['question_id']}: its score cannot "
                               f"be recomputed ({error})") from None
        for column, recomputed in checks:
            if _same(answer.get(column), recomputed):
                continue
            found = f"{where}: member answers.jsonl, question {answer['question_id']}: {column} {answer.get(column)!r}"
            if benchmark.own_score is None:
                raise ArchiveError(f"{found}, but {benchmark.title} has no score of its own")
            raise ArchiveError(f"{found} differs from {benchmark.own_score} recomputed from its answer and gold "
                               f"({recomputed!r})")


def _verify_labels(run: Mapping[str, Any], answers: list[dict[str, Any]], verdicts: list[dict[str, Any]],
                   where: str) -> None:
    """Each judged answer's verdict is the run judge's verdict in ``verdicts.jsonl`` whenever that row graded the same
    answer with the same reply (a later re-judging by the same judge may have replaced the row; it is then not
    compared)."""
    if not run.get("judge_identity"):
        return
    judge = json.loads(run["judge_identity"])
    own: dict[Any, dict[str, Any]] = {}
    for row in verdicts:
        try:
            if json.loads(row.get("judge_identity") or "null") == judge:
                own[row.get("question_id")] = row
        except (TypeError, ValueError):
            continue
    for answer in answers:
        verdict = own.get(answer["question_id"])
        graded = answer["status"] == "done" and answer["judge_status"] == "ok"
        if (not graded or verdict is None or verdict.get("status") != "ok"
                or verdict.get("hypothesis_hash") != hypothesis_hash(answer["hypothesis"])
                or verdict.get("reply") != answer.get("judge_reply")):
            continue
        if verdict.get("label") != answer["label"]:
            raise ArchiveError(f"{where}: member answers.jsonl, question {answer['question_id']}: verdict "
                               f"{answer['label']!r} differs from the run judge's {verdict.get('label')!r} in "
                               "verdicts.jsonl on the same reply")


def archive_bytes(path: str | Path) -> dict[str, bytes]:
    """Every member of an archive, by name (for tests and tools)."""
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}
