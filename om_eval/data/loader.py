"""Find, verify, validate and normalise LongMemEval files; choose subsets (longmemeval-reference §1, §6.1).

Why this order: a file is located first (an explicit path, then ``$LONGMEMEVAL_DIR`` or ``data_dir``, then the
Hugging Face hub at the pinned revision), hashed in 1 MiB chunks *before* it is parsed (a wrong 2.7 GB file is
refused without building its objects), then every record is validated and the first problem is reported with the
file, the question id and the field. Files are read with a streaming parser (ijson), one record at a time:
a file above :data:`STREAM_MIN_BYTES` (S, M) is validated in one pass that keeps only a light index
(:class:`QuestionEntry`), and its questions are read again one by one when visited, so that memory is bounded by a
few questions, never by the file. The pinned hashes belong to the three official file names only: any other
file is hashed so that runs can record it, but never checked. ``verify=False`` skips the hash and per-type count
checks, never the record validation. The streaming readers are in :mod:`om_eval.data.reading`, the subsets in
:mod:`om_eval.data.subsets`; this module re-exports their names.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from om_eval.data.reading import (
    DatasetValidationError,
    iter_records,
    read_records,
    sha256_file,
)
from om_eval.data.records import (
    DATE_PATTERN,
    QUESTION_TYPES,
    Dataset,
    HaystackSession,
    Question,
    QuestionEntry,
    Turn,
    parse_lme_date,
)
from om_eval.data.subsets import TYPE_ALIASES, select

__all__ = [
    "ENV_DIR",
    "EXPECTED_COUNTS",
    "LME_FILES",
    "LME_REPO",
    "LME_REVISION",
    "STREAM_MIN_BYTES",
    "TYPE_ALIASES",
    "DatasetIntegrityError",
    "DatasetNotFoundError",
    "DatasetValidationError",
    "LmeFile",
    "ResolvedFile",
    "check_counts",
    "dataset_from_records",
    "hub_url",
    "iter_records",
    "load_dataset",
    "question_from_record",
    "read_records",
    "resolve_dataset_file",
    "select",
    "sha256_file",
]

LME_REPO = "xiaowu0162/longmemeval-cleaned"
LME_REVISION = "98d7416c24c778c2fee6e6f3006e7a073259d48f"
#: The original 2024 release (what the paper and Mastra's harness used); its files have no ``.json`` suffix.
LME_ORIGINAL_REPO = "xiaowu0162/longmemeval"
#: Environment variable naming a folder that holds the official files under their hub names.
ENV_DIR = "LONGMEMEVAL_DIR"


@dataclass(frozen=True)
class LmeFile:
    """One official file: of the pinned cleaned release, or of the original one."""

    split: str
    filename: str
    size: int
    sha256: str
    repo: str = LME_REPO
    revision: str = LME_REVISION


LME_FILES: dict[str, LmeFile] = {
    f.split: f
    for f in (
        LmeFile("oracle", "longmemeval_oracle.json", 15_388_478,
                "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c"),
        LmeFile("s", "longmemeval_s_cleaned.json", 277_383_467,
                "d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442"),
        LmeFile("m", "longmemeval_m_cleaned.json", 2_737_100_077,
                "9d79e5524794a2e6900a3aa9cb7d9152c5a3e8319c9a87c25494ba1eacee495f"),
        # The uncleaned S that Mastra's harness downloaded. Its sha256 is the one a third-party harness reported
        # (longmemeval-reference §1.1); the hub repo has no pinned revision here, so the hash is what holds.
        LmeFile("s_original", "longmemeval_s", 278_000_000,
                "08d8dad4be43ee2049a22ff5674eb86725d0ce5ff434cde2627e5e8e7e117894", LME_ORIGINAL_REPO, "main"),
    )
}
_BY_FILENAME = {f.filename: f for f in LME_FILES.values()}

#: Questions per type in every official file (reference §1.4): type -> (total, of which ``_abs``).
EXPECTED_COUNTS: dict[str, tuple[int, int]] = {
    "single-session-user": (70, 6),
    "single-session-assistant": (56, 0),
    "single-session-preference": (30, 0),
    "multi-session": (133, 12),
    "knowledge-update": (78, 6),
    "temporal-reasoning": (133, 6),
}

_ROLES = ("user", "assistant")
#: Files at least this big are streamed (S is 277 MB, M 2.7 GB); smaller ones (oracle, fixtures) are held.
STREAM_MIN_BYTES = 64 << 20


def hub_url(filename: str, revision: str = LME_REVISION, repo: str = LME_REPO) -> str:
    """The direct download address of one file (of the cleaned release unless ``repo`` says otherwise)."""
    return f"https://huggingface.co/datasets/{repo}/resolve/{revision}/{filename}"


class DatasetNotFoundError(FileNotFoundError):
    """No source could provide the requested file; the message says which file and how to provide it."""


class DatasetIntegrityError(ValueError):
    """A file with an official name does not have the pinned sha256."""


# --------------------------------------------------------------------------------------------- resolution


@dataclass(frozen=True)
class ResolvedFile:
    """Where a dataset file was found."""

    path: Path
    name: str
    """``oracle``, ``s``, ``m`` for official files, else the file stem."""
    known: LmeFile | None
    """The pinned entry whose sha256 applies, or ``None`` (the file is hashed but not checked)."""
    source: str
    """``path``, ``data_dir``, ``$LONGMEMEVAL_DIR`` or ``hub``."""


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


def _hub_reachable(timeout_s: float = 3.0) -> bool:
    """Whether the hub (``$HF_ENDPOINT``, else huggingface.co) takes a connection at all, asked once with a short
    timeout: without it, an offline machine waits out the hub client's retries (23 s measured) before the message
    that says what to do."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "huggingface.co", port), timeout=timeout_s):
            return True
    except OSError:
        return False


def _split_of(value: str | os.PathLike[str] | None) -> str | None:
    if isinstance(value, str) and value in LME_FILES:
        return value
    return None


def resolve_dataset_file(
    split_or_path: str | os.PathLike[str] | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    revision: str = LME_REVISION,
) -> ResolvedFile:
    """Locate a LongMemEval file without reading it (see :func:`load_dataset` for the order).

    Raises:
        DatasetNotFoundError: nothing provides the file; the message names it and the two remedies.
        ValueError: neither a split nor a path was given, or a split name is unknown.
    """
    split = _split_of(split_or_path)
    if split_or_path is not None and split is None:
        if path is not None:
            raise ValueError(f"split {os.fspath(split_or_path)!r} is unknown: use one of {', '.join(LME_FILES)}")
        path = split_or_path
    if path is not None:
        file = Path(path).expanduser()
        if not file.is_file():
            known_hint = "" if split is not None else f" (or name a split: {', '.join(LME_FILES)})"
            raise DatasetNotFoundError(f"LongMemEval file {str(file)!r} does not exist{known_hint}")
        known = LME_FILES[split] if split is not None else _BY_FILENAME.get(file.name)
        return ResolvedFile(file, known.split if known else file.stem, known, "path")
    if split is None:
        raise ValueError(f"give a split ({', '.join(LME_FILES)}) or a path to a LongMemEval file")

    lme = LME_FILES[split]
    tried: list[str] = []
    folders = []
    if data_dir is not None:
        folders.append(("data_dir", Path(data_dir).expanduser()))
    env_dir = os.environ.get(ENV_DIR)
    if env_dir:
        folders.append((f"${ENV_DIR}", Path(env_dir).expanduser()))
    else:
        tried.append(f"${ENV_DIR} is not set")
    for source, folder in folders:
        candidate = folder / lme.filename
        if candidate.is_file():
            return ResolvedFile(candidate, split, lme, source)
        tried.append(f"{source}: {candidate} does not exist")

    offline = _hub_offline()
    unreachable = not offline and not _hub_reachable()
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        tried.append("Hugging Face hub: huggingface_hub is not installed (pip install huggingface_hub)")
    else:
        try:
            pinned = revision if lme.repo == LME_REPO else lme.revision
            local = hf_hub_download(
                repo_id=lme.repo, filename=lme.filename, repo_type="dataset", revision=pinned,
                local_files_only=offline or unreachable,
            )
        except Exception as error:  # the hub raises many kinds (offline, HTTP, network, cache)
            if offline:
                tried.append("Hugging Face hub: HF_HUB_OFFLINE=1 and the file is not in the local hub cache")
            elif unreachable:
                tried.append("Hugging Face hub: the hub cannot be reached from here and the file is not in the local "
                             "hub cache")
            else:
                detail = str(error).strip().splitlines()[0] if str(error).strip() else ""
                tried.append(f"Hugging Face hub: download failed ({error.__class__.__name__}: {detail})")
        else:
            return ResolvedFile(Path(local), split, lme if revision == LME_REVISION else None, "hub")

    url = hub_url(lme.filename, revision if lme.repo == LME_REPO else lme.revision, lme.repo)
    lines = [f"LongMemEval file {lme.filename!r} (split {split!r}) is missing. Looked for it:"]
    lines += [f"  - {entry}" for entry in tried]
    lines += [
        "Provide it in one of two ways:",
        f"  1. download {url}",
        f"     into a folder and set {ENV_DIR}=<that folder> (or pass path=... or data_dir=...);",
        "  2. allow the hub download: unset HF_HUB_OFFLINE, make huggingface.co reachable and install",
        f"     huggingface_hub; the file is fetched from {lme.repo} at revision "
        f"{(revision if lme.repo == LME_REPO else lme.revision)[:12]}.",
    ]
    raise DatasetNotFoundError("\n".join(lines))


# --------------------------------------------------------------------------------------------- validation


def _date(text: Any, source: str, qid: str, field: str) -> Any:
    if not isinstance(text, str):
        raise DatasetValidationError(source, f"must be a string, got {type(text).__name__}",
                                     question_id=qid, field=field)
    if not DATE_PATTERN.match(text):
        raise DatasetValidationError(
            source, f"{text!r} is not in the format 'YYYY/MM/DD (Day) HH:MM', e.g. '2023/05/30 (Tue) 23:40'",
            question_id=qid, field=field,
        )
    try:
        return parse_lme_date(text)
    except ValueError as error:
        raise DatasetValidationError(source, f"{text!r} is not a valid date", question_id=qid, field=field) from error


def _string_list(record: Mapping[str, Any], name: str, source: str, qid: str) -> list[str]:
    value = record[name]
    if not isinstance(value, list):
        raise DatasetValidationError(source, f"must be a list, got {type(value).__name__}", question_id=qid, field=name)
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise DatasetValidationError(source, f"must be a string, got {type(item).__name__}",
                                         question_id=qid, field=f"{name}[{i}]")
    return value


def _turns(raw: Any, source: str, qid: str, field: str) -> tuple[Turn, ...]:
    if not isinstance(raw, list):
        raise DatasetValidationError(source, f"must be a list of turns, got {type(raw).__name__}",
                                     question_id=qid, field=field)
    turns = []
    for j, turn in enumerate(raw):
        where = f"{field}[{j}]"
        if not isinstance(turn, Mapping):
            raise DatasetValidationError(source, f"must be an object, got {type(turn).__name__}",
                                         question_id=qid, field=where)
        role = turn.get("role")
        if role not in _ROLES:
            raise DatasetValidationError(source, f"{role!r} is not 'user' or 'assistant'",
                                         question_id=qid, field=f"{where}.role")
        content = turn.get("content")
        if not isinstance(content, str):
            problem = "is missing" if "content" not in turn else f"must be a string, got {type(content).__name__}"
            raise DatasetValidationError(source, problem, question_id=qid, field=f"{where}.content")
        has_answer = turn.get("has_answer")
        if "has_answer" in turn and not isinstance(has_answer, bool):
            raise DatasetValidationError(source, f"must be true or false, got {has_answer!r}",
                                         question_id=qid, field=f"{where}.has_answer")
        turns.append(Turn(role, content, has_answer))
    return tuple(turns)


_REQUIRED = ("question_type", "question", "answer", "question_date", "haystack_session_ids", "haystack_dates",
             "haystack_sessions", "answer_session_ids")


def question_from_record(record: Any, *, source: str = "<records>", index: int = 0, keep_raw: bool = False) -> Question:
    """Validate one raw record (reference §6.1) and normalise it; ``keep_raw`` keeps it on ``Question.raw``.

    Raises:
        DatasetValidationError: naming ``source``, the question id (or record index) and the field.
    """
    if not isinstance(record, Mapping):
        raise DatasetValidationError(source, f"must be a JSON object, got {type(record).__name__}", index=index)
    qid = record.get("question_id")
    if not isinstance(qid, str) or not qid:
        problem = "is missing" if "question_id" not in record else f"must be a non-empty string, got {qid!r}"
        raise DatasetValidationError(source, problem, index=index, field="question_id")
    for name in _REQUIRED:
        if name not in record:
            raise DatasetValidationError(source, "is missing", question_id=qid, field=name)
    qtype = record["question_type"]
    if qtype not in QUESTION_TYPES:
        raise DatasetValidationError(source, f"{qtype!r} is not one of the 6 types ({', '.join(QUESTION_TYPES)})",
                                     question_id=qid, field="question_type")
    if not isinstance(record["question"], str):
        raise DatasetValidationError(source, f"must be a string, got {type(record['question']).__name__}",
                                     question_id=qid, field="question")
    if not record["question"].strip():
        raise DatasetValidationError(
            source, "is empty: there is nothing to ask. Fill in the question text, or drop this record "
            "(select(..., ids=...) can leave it out)", question_id=qid, field="question",
        )
    answer = record["answer"]
    if isinstance(answer, bool) or not isinstance(answer, str | int):
        raise DatasetValidationError(source, f"must be a string or an integer, got {answer!r}",
                                     question_id=qid, field="answer")
    question_date = _date(record["question_date"], source, qid, "question_date")

    session_ids = _string_list(record, "haystack_session_ids", source, qid)
    dates = record["haystack_dates"]
    sessions = record["haystack_sessions"]
    for name, value in (("haystack_dates", dates), ("haystack_sessions", sessions)):
        if not isinstance(value, list):
            raise DatasetValidationError(source, f"must be a list, got {type(value).__name__}",
                                         question_id=qid, field=name)
        if len(value) != len(session_ids):
            raise DatasetValidationError(
                source, f"has {len(value)} entries but haystack_session_ids has {len(session_ids)}",
                question_id=qid, field=name,
            )
    answer_ids = _string_list(record, "answer_session_ids", source, qid)
    known_ids = set(session_ids)
    for i, sid in enumerate(answer_ids):
        if sid not in known_ids:
            raise DatasetValidationError(source, f"{sid!r} is not among haystack_session_ids",
                                         question_id=qid, field=f"answer_session_ids[{i}]")
    if not session_ids:
        raise DatasetValidationError(
            source, "is empty: the question has no haystack, so no memory can be built to answer it. Give it at "
            "least one session with its id and date, or drop this record", question_id=qid, field="haystack_sessions",
        )
    evidence = set(answer_ids)
    normalised = []
    for i, (sid, date_text, raw_turns) in enumerate(zip(session_ids, dates, sessions, strict=True)):
        date = _date(date_text, source, qid, f"haystack_dates[{i}]")
        turns = _turns(raw_turns, source, qid, f"haystack_sessions[{i}]")
        normalised.append(HaystackSession(qid, i, sid, date, date_text, turns, sid in evidence))
    if not any(turn.content.strip() for session in normalised for turn in session.turns):
        raise DatasetValidationError(
            source, f"holds {len(normalised)} session(s) but not one turn with text, so no memory can be built to "
            "answer the question. Check that the file was not truncated or stripped, or drop this record",
            question_id=qid, field="haystack_sessions",
        )
    return Question(
        question_id=qid,
        question_type=qtype,
        question=record["question"],
        answer=answer,
        question_date=question_date,
        question_date_text=record["question_date"],
        sessions=tuple(normalised),
        answer_session_ids=tuple(answer_ids),
        raw=record if keep_raw else {},
    )


def check_counts(questions: Sequence[Question] | Sequence[QuestionEntry], *, source: str) -> None:
    """Check a full official file: 500 questions with the per-type and abstention counts of reference §1.4."""
    total = sum(n for n, _ in EXPECTED_COUNTS.values())
    if len(questions) != total:
        raise DatasetValidationError(source, f"has {len(questions)} questions, expected {total}")
    per_type = Counter(q.question_type for q in questions)
    abstention = Counter(q.question_type for q in questions if q.is_abstention)
    for qtype, (expected, expected_abs) in EXPECTED_COUNTS.items():
        if per_type[qtype] != expected or abstention[qtype] != expected_abs:
            raise DatasetValidationError(
                source,
                f"{per_type[qtype]} {qtype!r} questions ({abstention[qtype]} abstention), "
                f"expected {expected} ({expected_abs} abstention)",
                field="question_type",
            )


def _index(records: Iterable[Any], source: str, keep_raw: bool, hold: bool
           ) -> tuple[list[QuestionEntry], list[Question]]:
    """Validate every record; return the index and, when ``hold``, the questions."""
    entries: list[QuestionEntry] = []
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for index, record in enumerate(records):
        question = question_from_record(record, source=source, index=index, keep_raw=keep_raw)
        if question.question_id in seen:
            raise DatasetValidationError(
                source, f"is repeated (first at record {seen[question.question_id]}, again at record {index})",
                question_id=question.question_id, field="question_id",
            )
        seen[question.question_id] = index
        entries.append(QuestionEntry(question.question_id, question.question_type, index))
        if hold:
            questions.append(question)
    if not entries:
        raise DatasetValidationError(
            source, "holds no questions (an empty array or no JSON lines). Point to a LongMemEval file with at "
            "least one record, e.g. the oracle split, or check that the file was written completely",
        )
    return entries, questions


def dataset_from_records(
    records: Iterable[Any], *, name: str, path: str = "", sha256: str = "", source: str | None = None,
    keep_raw: bool = False,
) -> Dataset:
    """Validate and normalise raw records (e.g. from :mod:`om_eval.data.synth`) into a held :class:`Dataset`.

    ``keep_raw`` keeps each record on ``Question.raw`` (off by default: it is the haystack a second time).
    """
    source = source or name
    entries, questions = _index(records, source, keep_raw, hold=True)
    return Dataset(name=name, path=path, sha256=sha256, questions=tuple(questions), entries=entries)


@dataclass(frozen=True)
class _FileStream:
    """Reads a validated file's questions again, one record at a time (a streamed :class:`Dataset`'s source)."""

    path: Path
    source: str
    keep_raw: bool
    stamp: tuple[int, int]
    """(size, mtime_ns) when the file was indexed: a changed file is refused, not silently mixed."""

    def __call__(self, entries: Sequence[QuestionEntry]) -> Iterator[Question]:
        stat = self.path.stat()
        if (stat.st_size, stat.st_mtime_ns) != self.stamp:
            raise DatasetValidationError(self.source, f"changed on disk since it was loaded ({self.path}); load it "
                                         "again so that its sha256 and index match what is run")
        wanted = {e.position: e.question_id for e in entries}
        last = max(wanted, default=-1)
        records = iter_records(self.path, source=self.source)
        try:
            for index, record in enumerate(records):
                if index > last:
                    return
                expected = wanted.get(index)
                if expected is None:
                    continue
                question = question_from_record(record, source=self.source, index=index, keep_raw=self.keep_raw)
                if question.question_id != expected:
                    raise DatasetValidationError(
                        self.source, f"is now at record {index}, where {expected!r} was when the file was loaded",
                        question_id=question.question_id,
                    )
                yield question
        finally:
            records.close()


def load_dataset(
    split_or_path: str | os.PathLike[str] | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    revision: str = LME_REVISION,
    verify: bool = True,
    stream: bool | None = None,
    keep_raw: bool = False,
) -> Dataset:
    """Load, verify, validate and normalise a LongMemEval file.

    Resolution order: an explicit path (``split_or_path`` that is not a split name, or ``path=``) →
    ``<data_dir>/<filename>`` → ``$LONGMEMEVAL_DIR/<filename>`` → ``huggingface_hub.hf_hub_download`` from
    ``xiaowu0162/longmemeval-cleaned`` at ``revision`` (only the local hub cache when ``HF_HUB_OFFLINE=1``).

    Args:
        split_or_path: ``"oracle"``, ``"s"``, ``"m"``, or a path to a JSON array (or JSON lines) of records.
        path: an explicit file for the split named by ``split_or_path`` (its pinned hash then applies).
        data_dir: a folder holding the official files under their hub names; searched before the env var.
        revision: hub revision; the pinned hashes apply only to :data:`LME_REVISION`.
        verify: check the pinned sha256 and the per-type counts of official files (records are always
            validated). Files with other names are hashed and recorded, never checked.
        stream: ``True`` keeps only an index and reads the questions again one at a time when visited
            (:meth:`Dataset.iter_questions`); ``False`` holds them all; ``None`` streams files of at least
            :data:`STREAM_MIN_BYTES`. Every record is validated at load time either way.
        keep_raw: keep each raw record on ``Question.raw`` (off by default).

    Raises:
        DatasetNotFoundError: no source has the file (the message names it and both remedies).
        DatasetIntegrityError: an official file's sha256 differs from the pinned one.
        DatasetValidationError: a record is malformed (file, question id and field in the message).
    """
    resolved = resolve_dataset_file(split_or_path, path=path, data_dir=data_dir, revision=revision)
    filename = resolved.path.name
    digest = sha256_file(resolved.path)
    expected = resolved.known.sha256 if verify and resolved.known is not None else None
    if expected is not None and digest != expected:
        raise DatasetIntegrityError(
            f"{filename}: sha256 mismatch for {resolved.path}: expected {expected}, actual {digest}. "
            f"This is not the pinned {LME_REPO}@{LME_REVISION[:12]} file (third-party re-uploads differ); "
            "pass verify=False to load it anyway."
        )
    stat = resolved.path.stat()
    if stream is None:
        stream = stat.st_size >= STREAM_MIN_BYTES
    entries, questions = _index(iter_records(resolved.path, source=filename), filename, keep_raw, hold=not stream)
    if expected is not None:
        check_counts(entries, source=filename)
    if stream:
        reader = _FileStream(resolved.path, filename, keep_raw, (stat.st_size, stat.st_mtime_ns))
        return Dataset(resolved.name, str(resolved.path), digest, entries=entries, stream=reader)
    return Dataset(resolved.name, str(resolved.path), digest, tuple(questions), entries=entries)
