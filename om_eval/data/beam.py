"""BEAM (Tavakoli et al., 2025): its chats read, checked and turned into dated sessions and probing questions.

A tier (``100K``, ``500K``, ``1M``, ``10M``) is a folder of numbered chats, each with ``chat.json`` (batches of
turns of messages) and ``probing_questions/probing_questions.json`` (two questions per ability). The project never
ships them (upstream has no licence file): they are read from ``dataset.path`` or ``$BEAM_DIR``, either the folder
holding the tier folders, a clone of the repository (its ``chats/`` folder) or the tier folder itself; with neither,
the pinned commit's files are downloaded once into the data cache. Every file listed in the manifest
(``beam_manifest.json``: sha256 where a copy was at hand, else the git blob id the commit's tree gives) is checked.

What this module settles, so that every later step agrees:

* **A batch is a session**, dated by its first time anchor (``"March-15-2024"``, on a user message or the batch);
  a batch without one takes the last date seen, and batches before the chat's first anchor take that anchor's.
  A chat with no anchor at all is refused: its conversation would have no dates.
* **Messages keep their text** as the chat has it, the ``->-> 1,1`` markers included (upstream's own pipelines
  keep them), and their ``id``, which questions cite as evidence (``source_chat_ids``, read through the nested
  lists and ``{first_statement: [...]}`` objects some abilities use).
* **Question ids** are ``beam_<tier>_<chat>_<ability>_<n>``; a chat's questions share one haystack
  (``beam_<tier>_<chat>``), so one memory answers them all, asked :data:`QUESTION_DELAY` after the last session.
* **The gold stays whole**: the rubric (every ability has one), the ideal answer under whichever key the ability
  uses, the difficulty and the evidence ids; an ability missing from a chat's file, a question without a rubric or
  a message without an id is a :class:`BeamValidationError` naming the file and the field.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

from om_eval.data.reading import DatasetValidationError, PinnedFileNotFoundError

__all__ = [
    "ABILITIES",
    "ENV_DIR",
    "IDEAL_KEYS",
    "QUESTION_DELAY",
    "TIERS",
    "BeamChat",
    "BeamQuestion",
    "BeamSession",
    "BeamValidationError",
    "chat_numbers",
    "check_evidence",
    "haystack_id",
    "manifest",
    "parse_anchor",
    "pinned_tier_questions",
    "pinned_tier_sha256",
    "read_chat",
    "read_questions",
    "tier_folder",
    "tier_sha256",
]

TIERS = ("100K", "500K", "1M", "10M")
ABILITIES = ("abstention", "contradiction_resolution", "event_ordering", "information_extraction",
             "instruction_following", "knowledge_update", "multi_session_reasoning", "preference_following",
             "summarization", "temporal_reasoning")
#: Where an ability keeps its ideal answer (instruction and preference questions: what compliance looks like).
IDEAL_KEYS = ("answer", "ideal_response", "ideal_answer", "ideal_summary", "expected_compliance")
ENV_DIR = "BEAM_DIR"
QUESTION_DELAY = timedelta(days=1)
CHAT_FILE = "chat.json"
QUESTIONS_FILE = "probing_questions/probing_questions.json"
_ANCHOR_FORMAT = "%B-%d-%Y"


class BeamValidationError(DatasetValidationError):
    """A BEAM file breaks the format: the message names the file, the field as a path in it (``[2].turns[5][0].id``,
    ``event_ordering[1].rubric``) and what is wrong."""

    def __init__(self, source: str, problem: str, *, field: str | None = None) -> None:
        super().__init__(source, problem, field=field)
        self.args = (f"{source}: field {field}: {problem}" if field else f"{source}: {problem}",)


@cache
def manifest() -> Mapping[str, Any]:
    """The pinned commit and, per file of every tier, its sha256 and/or git blob id."""
    data: Mapping[str, Any] = json.loads((Path(__file__).parent / "beam_manifest.json").read_text(encoding="utf-8"))
    return data


def haystack_id(tier: str, chat: int) -> str:
    return f"beam_{tier}_{chat}"


def parse_anchor(text: object, *, source: str, field: str) -> datetime:
    """A time anchor (``March-15-2024``) as a date."""
    try:
        return datetime.strptime(str(text).strip(), _ANCHOR_FORMAT)
    except ValueError:
        raise BeamValidationError(source, f"time anchor {text!r} is not a date like 'March-15-2024'",
                                  field=field) from None


@dataclass(frozen=True)
class BeamMessage:
    id: int
    role: str
    content: str


@dataclass(frozen=True)
class BeamSession:
    """One batch of a chat."""

    number: int
    """Its ``batch_number``."""
    date: datetime
    messages: tuple[BeamMessage, ...]


@dataclass(frozen=True)
class BeamQuestion:
    ability: str
    index: int
    """Its place in the ability's list (0, 1)."""
    question: str
    difficulty: str | None
    rubric: tuple[str, ...]
    ideal: str | None
    """The ideal answer (or the expected compliance), as text."""
    evidence_ids: tuple[int, ...]
    """The message ids that hold the evidence (empty for abstention questions)."""


@dataclass(frozen=True)
class BeamChat:
    tier: str
    number: int
    sessions: tuple[BeamSession, ...]

    @property
    def haystack_id(self) -> str:
        return haystack_id(self.tier, self.number)

    def question_id(self, question: BeamQuestion) -> str:
        return f"{self.haystack_id}_{question.ability}_{question.index}"

    @property
    def asked_at(self) -> datetime:
        return self.sessions[-1].date + QUESTION_DELAY


# ------------------------------------------------------------------------------------------------ the folder


def tier_folder(path: str | os.PathLike[str] | None, tier: str, *, download: bool = True) -> Path:
    """The folder of ``tier``'s chats: under ``path`` (else ``$BEAM_DIR``), else the pinned commit's files in the
    data cache (downloaded once when downloads are on).

    Raises:
        PinnedFileNotFoundError: naming the folder looked at and how to give one.
    """
    if tier not in TIERS:
        raise BeamValidationError("dataset.tier", f"{tier!r} is not a BEAM tier: use one of {', '.join(TIERS)}")
    chosen = path or os.environ.get(ENV_DIR)
    if chosen:
        base = Path(chosen).expanduser()
        for candidate in (base / tier, base / "chats" / tier, base):
            if candidate.name == tier and candidate.is_dir() and chat_numbers(candidate):
                return candidate
        have = sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
        where = f"{base} holds {', '.join(have)}" if have else f"{base} is not a folder of BEAM tiers"
        raise PinnedFileNotFoundError(f"BEAM tier {tier} not found: {where}. Give dataset.path (or ${ENV_DIR}) as the "
                                      f"folder holding {tier}/<chat>/chat.json, a clone of {_repository()}, or the "
                                      f"{tier} folder itself; or choose dataset.tier from what the copy holds")
    if not download:
        raise PinnedFileNotFoundError(f"BEAM data not given: set ${ENV_DIR} or dataset.path to the folder holding "
                                      f"{tier}/ (from {_repository()} at commit {manifest()['commit'][:7]}; it has no "
                                      "licence file, so om-eval ships no copy)")
    return _download_tier(tier)


def _repository() -> str:
    return f"github.com/{manifest()['repository']}"


def chat_numbers(folder: Path) -> list[int]:
    """The numbered chats of a tier folder (those with a ``chat.json``), in order."""
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit() and (p / CHAT_FILE).is_file())


def _download_tier(tier: str) -> Path:
    import urllib.request

    from om_eval.common.files import atomic_write, cache_folder, downloads_off

    pinned = manifest()
    commit = pinned["commit"]
    folder = cache_folder("data") / f"beam-{commit[:12]}" / tier
    wanted = [name for name in pinned["files"] if name.startswith(f"{tier}/")]
    missing = [name for name in wanted if not (folder.parent / name).is_file()]
    if missing and downloads_off():
        raise PinnedFileNotFoundError(f"BEAM tier {tier} is not given and downloads are off: set ${ENV_DIR} or "
                                      f"dataset.path to a copy (folder holding {tier}/)")
    for name in missing:
        url = f"https://raw.githubusercontent.com/{pinned['repository']}/{commit}/chats/{name}"
        try:
            with urllib.request.urlopen(url, timeout=120.0) as response:
                data = response.read()
        except OSError as error:
            raise PinnedFileNotFoundError(f"BEAM tier {tier}: could not download {url} ({error}); set ${ENV_DIR} "
                                          "or dataset.path to a copy instead") from None
        problem = _mismatch(name, data)
        if problem:
            raise BeamValidationError(url, f"{problem}: not kept")
        atomic_write(folder.parent / name, data)
    return folder


# ---------------------------------------------------------------------------------------------- checking


def _git_blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _mismatch(name: str, data: bytes) -> str | None:
    """Why ``data`` is not the pinned file ``name`` (``100K/1/chat.json``), or ``None`` (also for a file the commit
    does not have: a user's own chat)."""
    pinned = manifest()["files"].get(name)
    if pinned is None:
        return None
    if "sha256" in pinned:
        actual = hashlib.sha256(data).hexdigest()
        return None if actual == pinned["sha256"] else f"sha256 {actual} is not the pinned {pinned['sha256']}"
    actual = _git_blob(data)
    return None if actual == pinned["git_blob"] else f"git blob {actual} is not the pinned {pinned['git_blob']}"


def _read_json(path: Path, name: str, verify: bool) -> Any:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise BeamValidationError(str(path), "is missing: every chat needs chat.json and "
                                  f"{QUESTIONS_FILE}") from None
    if verify and (problem := _mismatch(name, data)):
        raise BeamValidationError(str(path), f"{problem} (BEAM at commit {manifest()['commit'][:7]}); pass "
                                  "dataset.verify=false to use another version knowingly")
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise BeamValidationError(str(path), f"not JSON: {error}") from None


def _text(value: Any, source: str, field: str) -> str:
    if not isinstance(value, str):
        raise BeamValidationError(source, f"must be text, got {type(value).__name__}", field=field)
    return value


def _ids(value: Any, source: str, field: str) -> Iterator[int]:
    """Message ids from a ``source_chat_ids`` value: an int, or lists and objects of them, nested (``None``: none)."""
    if isinstance(value, int) and not isinstance(value, bool):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _ids(item, source, field)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _ids(item, source, field)
    elif value is not None:
        raise BeamValidationError(source, f"{value!r} is not a message id: evidence is cited by the integer ids of "
                                  "chat.json's messages", field=field)


def _question(raw: Any, ability: str, index: int, source: str) -> BeamQuestion:
    where = f"{ability}[{index}]"
    if not isinstance(raw, Mapping):
        raise BeamValidationError(source, f"must be an object, got {type(raw).__name__}", field=where)
    rubric = raw.get("rubric")
    if not isinstance(rubric, list) or not rubric or not all(isinstance(r, str) and r.strip() for r in rubric):
        raise BeamValidationError(source, "every BEAM question needs a rubric: a non-empty list of criteria (text); "
                                  "the judge scores the answer item by item", field=f"{where}.rubric")
    ideal = next((raw[key] for key in IDEAL_KEYS if raw.get(key) is not None), None)
    return BeamQuestion(
        ability=ability, index=index, question=_text(raw.get("question"), source, f"{where}.question"),
        difficulty=raw.get("difficulty") if isinstance(raw.get("difficulty"), str) else None,
        rubric=tuple(rubric), ideal=None if ideal is None else str(ideal),
        evidence_ids=tuple(dict.fromkeys(_ids(raw.get("source_chat_ids"), source, f"{where}.source_chat_ids"))),
    )


def read_questions(folder: Path, number: int, *, verify: bool = True) -> list[BeamQuestion]:
    """The probing questions of chat ``number`` in ability order (the order upstream's tables use)."""
    path = folder / str(number) / QUESTIONS_FILE
    data = _read_json(path, f"{folder.name}/{number}/{QUESTIONS_FILE}", verify)
    source = str(path)
    if not isinstance(data, Mapping):
        raise BeamValidationError(source, f"must be an object keyed by ability, got {type(data).__name__}")
    unknown = sorted(set(data) - set(ABILITIES))
    if unknown:
        raise BeamValidationError(source, f"abilities {unknown} are unknown: BEAM's are {', '.join(ABILITIES)}")
    questions: list[BeamQuestion] = []
    for ability in ABILITIES:
        entries = data.get(ability)
        if not isinstance(entries, list):
            raise BeamValidationError(source, "is missing or not a list: every chat has questions of all ten "
                                      "abilities", field=ability)
        questions.extend(_question(raw, ability, i, source) for i, raw in enumerate(entries))
    if not questions:
        raise BeamValidationError(source, "holds no question: a chat without questions cannot be scored; leave it "
                                  "out of the copy or of dataset.subset.haystacks")
    return questions


def read_chat(folder: Path, number: int, *, verify: bool = True) -> BeamChat:
    """Chat ``number`` of a tier folder, its batches dated (see the module docstring)."""
    path = folder / str(number) / CHAT_FILE
    data = _read_json(path, f"{folder.name}/{number}/{CHAT_FILE}", verify)
    source = str(path)
    if not isinstance(data, list) or not data:
        raise BeamValidationError(source, "must be a non-empty list of batches (each with batch_number and turns)")
    batches: list[tuple[int, datetime | None, tuple[BeamMessage, ...]]] = []
    seen: set[int] = set()
    for b, batch in enumerate(data):
        if not isinstance(batch, Mapping) or not isinstance(batch.get("turns"), list):
            raise BeamValidationError(source, "must be an object with a list of turns", field=f"[{b}].turns")
        anchor = batch.get("time_anchor")
        date = parse_anchor(anchor, source=source, field=f"[{b}].time_anchor") if anchor else None
        messages = []
        for t, turn in enumerate(batch["turns"]):
            if not isinstance(turn, list):
                raise BeamValidationError(source, "must be a list of messages", field=f"[{b}].turns[{t}]")
            for m, message in enumerate(turn):
                where = f"[{b}].turns[{t}][{m}]"
                if not isinstance(message, Mapping):
                    raise BeamValidationError(source, "must be an object with role, id and content", field=where)
                ident = message.get("id")
                if not isinstance(ident, int) or isinstance(ident, bool) or ident in seen:
                    problem = "appears twice in the chat" if ident in seen else "must be an integer message id"
                    raise BeamValidationError(source, problem, field=f"{where}.id")
                seen.add(ident)
                role = message.get("role")
                if role not in ("user", "assistant"):
                    raise BeamValidationError(source, f"{role!r} is not user or assistant", field=f"{where}.role")
                if date is None and message.get("time_anchor"):
                    date = parse_anchor(message["time_anchor"], source=source, field=f"{where}.time_anchor")
                messages.append(BeamMessage(ident, role, _text(message.get("content"), source, f"{where}.content")))
        number_of_batch = batch.get("batch_number", b + 1)
        batches.append((number_of_batch if isinstance(number_of_batch, int) else b + 1, date, tuple(messages)))
    known = [date for _, date, _ in batches if date is not None]
    if not known:
        raise BeamValidationError(source, "has no time anchor in any batch: its sessions cannot be dated")
    sessions, last = [], known[0]
    for number_of_batch, date, said in batches:
        last = date or last
        sessions.append(BeamSession(number_of_batch, last, said))
    return BeamChat(folder.name, number, tuple(sessions))


def check_evidence(chat: BeamChat, questions: Sequence[BeamQuestion], folder: Path) -> None:
    """Every evidence id a question cites is a message of its chat (else its recall@k would quietly lose it)."""
    known = {m.id for session in chat.sessions for m in session.messages}
    for question in questions:
        missing = [i for i in question.evidence_ids if i not in known]
        if missing:
            raise BeamValidationError(str(folder / str(chat.number) / QUESTIONS_FILE),
                                      f"cites message ids {missing} that {CHAT_FILE} does not have",
                                      field=f"{question.ability}[{question.index}].source_chat_ids")


def tier_sha256(folder: Path, numbers: Sequence[int]) -> str:
    """One digest of a tier's files (each chat's two files, by name and content), for the run record."""
    return _digest((number, name, hashlib.sha256((folder / str(number) / name).read_bytes()).hexdigest())
                   for number in numbers for name in (CHAT_FILE, QUESTIONS_FILE))


def _digest(files: Iterable[tuple[int, str, str]]) -> str:
    digest = hashlib.sha256()
    for number, name, sha256 in files:
        digest.update(f"{number}/{name}\0".encode())
        digest.update(bytes.fromhex(sha256))
    return digest.hexdigest()


def pinned_tier_questions(tier: str) -> int | None:
    """How many questions the pinned commit's tier holds (two per ability per chat), or ``None`` for a tier it
    lacks."""
    chats = {name.split("/")[1] for name in manifest()["files"] if name.startswith(f"{tier}/")}
    return 2 * len(ABILITIES) * len(chats) or None


def pinned_tier_sha256(tier: str) -> str | None:
    """:func:`tier_sha256` of the whole tier as the pinned commit has it, or ``None`` when the manifest lacks a
    file's sha256 (1M and 10M are pinned by git blob id only)."""
    files = manifest()["files"]
    numbers = sorted({int(name.split("/")[1]) for name in files if name.startswith(f"{tier}/")})
    wanted = [(n, name, files.get(f"{tier}/{n}/{name}", {}).get("sha256")) for n in numbers
              for name in (CHAT_FILE, QUESTIONS_FILE)]
    if not wanted or any(sha256 is None for _, _, sha256 in wanted):
        return None
    return _digest((n, name, str(sha256)) for n, name, sha256 in wanted)
