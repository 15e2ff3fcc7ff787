"""LoCoMo (Maharana et al., ACL 2024): its file read, checked and turned into conversations and questions.

The file (``locomo10.json``) holds 10 long two-person conversations of 19 to 35 sessions, each with its questions.
The project never ships it (CC BY-NC 4.0): it is read from ``dataset.path`` or ``$LOCOMO_PATH``, and the official
file is checked against its pinned sha256 before it is parsed.

What this module settles, so that every later step agrees:

* **Question ids** are ``locomo_<conversation index>_qa<question index>``, the ids the community audit of its gold
  answers uses (``locomo-audit-errors.json``).
* **Sessions keep their date and time** (``"1:56 pm on 8 May, 2023"``), parsed to a datetime; turns are spaced
  seconds apart from it, in order.
* **Image turns keep their caption as text**: the turn's words, then ``[image: <caption>]``.
* **The two speakers map to roles** by ``speaker_roles``: ``a_user`` (default; the first speaker is the user) or
  ``b_user``. A memory built for one speaker sees the other as the assistant.
* **Category 5** (adversarial, unanswerable) has ``adversarial_answer`` where the others have ``answer``: its gold
  is the adversarial answer, and :attr:`LocomoQuestion.adversarial` says so (LoCoMo scores it by refusal phrases).
* **Evidence** stays as LoCoMo's dialog ids (``D<session>:<turn>``); :func:`evidence_turns` reads the few
  malformed ones (``D:11:26``, ``D8:6; D9:17``) as their dialog ids. A question whose evidence names no turn of its
  conversation is refused (:func:`unresolved_evidence` has the rule); the real file's few loose ids pass it.
* **Every record is checked** before anything runs, as LongMemEval files are: the first problem is a
  :class:`LocomoValidationError` naming the file, the conversation, the question and the field.
* **As benchmark questions** (:mod:`om_eval.data.locomo_questions`): every question of a conversation shares one
  haystack (``haystack_id`` ``locomo_<conversation index>``), so one memory answers them all; the question is asked
  :data:`QUESTION_DELAY` after the conversation's last turn (LoCoMo gives questions no date).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal, cast

from om_eval.data.reading import DatasetValidationError, read_pinned_json
from om_eval.om.config import option_error

__all__ = [
    "CATEGORY_NAMES",
    "ENV_PATH",
    "LOCOMO_FILE",
    "LOCOMO_SHA256",
    "QUESTION_DELAY",
    "LocomoConversation",
    "LocomoQuestion",
    "LocomoSession",
    "LocomoTurn",
    "LocomoValidationError",
    "dialog_turns",
    "evidence_turns",
    "haystack_id",
    "load_locomo",
    "loose_evidence",
    "parse_session_time",
    "question_id",
    "read_locomo",
    "unresolved_evidence",
]

LOCOMO_FILE = "locomo10.json"
#: sha256 of ``data/locomo10.json`` in github.com/snap-research/locomo at commit 3eb6f2c.
LOCOMO_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
ENV_PATH = "LOCOMO_PATH"
ORIGIN = "github.com/snap-research/locomo, data/locomo10.json at commit 3eb6f2c"
#: Where the pinned file is downloaded from when no path is given (checked against :data:`LOCOMO_SHA256`).
LOCOMO_URL = "https://raw.githubusercontent.com/snap-research/locomo/3eb6f2c/data/locomo10.json"
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
"""LoCoMo's category numbers and the names its paper gives them (vendors renumber them; reports show both). A
question's type (``items.question_type``) is its category's name."""
#: When a question is asked: this long after the conversation's last turn.
QUESTION_DELAY = timedelta(hours=1)
_DIALOG_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_PLAIN_ID = re.compile(r"^D\d+:\d+$")
SpeakerRoles = Literal["a_user", "b_user"]
SPEAKER_ROLES = ("a_user", "b_user")
#: Seconds between consecutive turns of a session (a session has one time stamp).
TURN_SPACING_SECONDS = 5

_SESSION_TIME = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.IGNORECASE
)
_MONTHS = {name: number for number, name in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
     "december"), start=1)}
_SESSION_KEY = re.compile(r"^session_(\d+)$")


@dataclass(frozen=True)
class LocomoTurn:
    dia_id: str
    """LoCoMo's dialog id, ``D<session>:<turn>``: what evidence points at."""
    speaker: str
    role: str
    """``user`` or ``assistant``, by the conversation's speaker mapping."""
    text: str
    """The words said, then ``[image: <caption>]`` for a shared image."""
    created_at: datetime


@dataclass(frozen=True)
class LocomoSession:
    number: int
    """LoCoMo's session number (``session_<n>``), from 1."""
    date_text: str
    started_at: datetime
    turns: tuple[LocomoTurn, ...]


@dataclass(frozen=True)
class LocomoQuestion:
    id: str
    """``locomo_<conversation index>_qa<question index>``, as the audit of LoCoMo's gold answers names it."""
    conversation: int
    question: str
    answer: str
    """The gold answer as text (a few are numbers in the file); for category 5 the adversarial answer."""
    category: int
    """1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial (unanswerable)."""
    evidence: tuple[str, ...]
    adversarial: bool


@dataclass(frozen=True)
class LocomoConversation:
    index: int
    sample_id: str
    speakers: tuple[str, str]
    sessions: tuple[LocomoSession, ...]
    questions: tuple[LocomoQuestion, ...]

    @property
    def ends_at(self) -> datetime:
        """The time of the last turn: a question about the conversation is asked after it."""
        return max(turn.created_at for session in self.sessions for turn in session.turns)


def question_id(conversation: int, index: int) -> str:
    return f"locomo_{conversation}_qa{index}"


def haystack_id(conversation: int) -> str:
    """The id of a conversation's shared memory (every question of it is answered from one build)."""
    return f"locomo_{conversation}"


def evidence_turns(evidence: Sequence[str]) -> frozenset[tuple[int, int]]:
    """(session, turn) of every dialog id in ``evidence``; malformed ids are read where a dialog id is plain in them
    (``D:11:26`` is D11:26, ``D8:6; D9:17`` two ids) and dropped where none is (a bare ``D``)."""
    return frozenset((int(s), int(t)) for text in evidence for s, t in _DIALOG_ID.findall(str(text)))


def parse_session_time(text: object, *, where: str = "session") -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as a datetime (naive: LoCoMo gives no time zone)."""
    parsed = _session_time(text)
    if parsed is None:
        raise ValueError(f"{where}: date and time {text!r} is not like '1:56 pm on 8 May, 2023'")
    return parsed


def _session_time(text: object) -> datetime | None:
    match = _SESSION_TIME.match(text) if isinstance(text, str) else None
    month = _MONTHS.get(match.group(5).lower()) if match else None
    if match is None or month is None:
        return None
    hour, minute = int(match.group(1)) % 12, int(match.group(2))
    if match.group(3).lower() == "pm":
        hour += 12
    try:
        return datetime(int(match.group(6)), month, int(match.group(4)), hour, minute)
    except ValueError:  # 31 June, or 13:xx pm
        return None


class LocomoValidationError(DatasetValidationError):
    """A LoCoMo file or its audit breaks the format. The message names the file, the record (``conversation 3
    (conv-30)`` or ``audit entry 12``), the question id and the field as a path in the record (``qa[7].category``,
    ``conversation.session_2[5].text``), then what is wrong and what to do."""

    def __init__(self, source: str, problem: str, *, place: str | None = None, question_id: str | None = None,
                 field: str | None = None, index: int | None = None) -> None:
        super().__init__(source, problem, question_id=question_id, field=field, index=index)
        self.place = place
        where = [w for w in (place, question_id and f"question {question_id!r}", field and f"field {field}") if w]
        self.args = (f"{source}: {' '.join(where)}: {problem}" if where else f"{source}: {problem}",)


@dataclass(frozen=True)
class _Record:
    """Where a conversation's problems are reported: its file and its place in it."""

    source: str
    index: int
    place: str

    def error(self, problem: str, field: str | None = None, question: str | None = None) -> LocomoValidationError:
        return LocomoValidationError(self.source, problem, place=self.place, question_id=question, field=field,
                                     index=self.index)


def json_kind(value: object) -> str:
    """A JSON value as a message names it: its JSON type, and short scalars themselves (``an object``, ``true``,
    ``the string "x"``)."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = json.dumps(value)
    return f"{'the string' if isinstance(value, str) else 'the number'} {text[:40] + '...' if len(text) > 40 else text}"


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _roles(speakers: tuple[str, str], mapping: str) -> dict[str, str]:
    if mapping not in SPEAKER_ROLES:
        raise option_error("dataset.speaker_roles", f"={mapping!r} is invalid: allowed values are "
                           f"{', '.join(SPEAKER_ROLES)}")
    user, assistant = speakers if mapping == "a_user" else speakers[::-1]
    return {user: "user", assistant: "assistant"}


def _turn(raw: object, roles: Mapping[str, str], at: datetime, record: _Record, field: str) -> LocomoTurn:
    if not isinstance(raw, Mapping):
        raise record.error(f"must be a turn object with speaker, dia_id and text, got {json_kind(raw)}: fix the turn "
                           "or drop it", field)
    for name in ("speaker", "dia_id", "text"):
        if not isinstance(value := raw.get(name), str):
            problem = "is missing" if name not in raw else f"must be a string, got {json_kind(value)}"
            raise record.error(f"{problem}: a turn needs its speaker, dia_id and text", f"{field}.{name}")
    speaker, dia_id, text = raw["speaker"], raw["dia_id"], raw["text"]
    if speaker not in roles:
        raise record.error(f"{speaker!r} is neither of the conversation's two speakers "
                           f"({', '.join(map(repr, roles))}): fix the name or conversation.speaker_a/speaker_b",
                           f"{field}.speaker")
    if not _PLAIN_ID.match(dia_id):
        raise record.error(f"{dia_id!r} is not a dialog id like 'D1:3' (D<session>:<turn>), which evidence points "
                           "at: fix it", f"{field}.dia_id")
    caption = raw.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        text = f"{text} [image: {caption.strip()}]" if text.strip() else f"[image: {caption.strip()}]"
    return LocomoTurn(dia_id, speaker, roles[speaker], text, at)


def _sessions(conversation: Mapping[str, Any], roles: Mapping[str, str], record: _Record
              ) -> tuple[LocomoSession, ...]:
    numbers = sorted(int(m.group(1)) for key in conversation if (m := _SESSION_KEY.match(key)))
    sessions = []
    for number in numbers:
        raw = conversation[f"session_{number}"]
        field = f"conversation.session_{number}"
        if not isinstance(raw, list):
            raise record.error(f"must be a list of turns, got {json_kind(raw)}", field)
        date_text = conversation.get(f"session_{number}_date_time")
        if (started := _session_time(date_text)) is None:
            problem = ("is missing" if f"session_{number}_date_time" not in conversation
                       else f"{json_kind(date_text)} is not a date and time")
            raise record.error(f"{problem}: give the session its date and time like '1:56 pm on 8 May, 2023'",
                               f"{field}_date_time")
        turns = tuple(_turn(t, roles, started + timedelta(seconds=TURN_SPACING_SECONDS * i), record, f"{field}[{i}]")
                      for i, t in enumerate(raw))
        # _session_time read date_text, so it is a str.
        sessions.append(LocomoSession(number, cast(str, date_text), started, turns))
    if not sessions:
        raise record.error("holds no session: a conversation needs session_<n> lists of turns, each with its "
                           "session_<n>_date_time", "conversation")
    if not any(session.turns for session in sessions):
        raise record.error(f"its {len(sessions)} session(s) hold no turn, so there is nothing to remember: check "
                           "that the file was not truncated or stripped, or drop the conversation", "conversation")
    return tuple(sessions)


def _evidence(raw: Mapping[str, Any], turns: frozenset[tuple[int, int]], record: _Record, field: str, qid: str
              ) -> tuple[str, ...]:
    """A question's evidence: a list of dialog ids of which at least one names a turn, or none at all."""
    evidence = raw.get("evidence")
    if evidence is None:
        return ()
    if not isinstance(evidence, list):
        raise record.error(f"must be a list of dialog ids like ['D1:3'], got {json_kind(evidence)}", field, qid)
    for j, item in enumerate(evidence):
        if not isinstance(item, str):
            raise record.error(f"must be a dialog id like 'D1:3', got {json_kind(item)}", f"{field}[{j}]", qid)
    if problem := unresolved_evidence(evidence, turns):
        raise record.error(f"{problem}: correct the ids, or drop the question", field, qid)
    return tuple(evidence)


def _question(raw: object, index: int, turns: frozenset[tuple[int, int]], record: _Record) -> LocomoQuestion:
    qid, field = question_id(record.index, index), f"qa[{index}]"
    if not isinstance(raw, Mapping):
        raise record.error(f"must be a question object (question, answer, evidence, category), got {json_kind(raw)}",
                           field, qid)
    category = raw.get("category")
    if type(category) is not int or category not in CATEGORY_NAMES:
        problem = "is missing" if "category" not in raw else f"must be an integer 1-5, got {json_kind(category)}"
        names = ", ".join(f"{number} {name}" for number, name in CATEGORY_NAMES.items())
        raise record.error(f"{problem} ({names}): fix it or drop the question", f"{field}.category", qid)
    text = raw.get("question")
    if not isinstance(text, str) or not text.strip():
        problem = "is missing" if "question" not in raw else f"must be a non-empty string, got {json_kind(text)}"
        raise record.error(f"{problem}: there is nothing to ask; fill it in or drop the question",
                           f"{field}.question", qid)
    adversarial = category == 5
    name = "answer" if adversarial and "adversarial_answer" not in raw and "answer" in raw else (
        "adversarial_answer" if adversarial else "answer")
    answer = raw.get(name)
    if not (isinstance(answer, str) and answer.strip()) and not is_number(answer):
        problem = ("is missing" if name not in raw
                   else f"must be a non-empty string or a number, got {json_kind(answer)}")
        raise record.error(f"{problem}: a category-{category} question is scored against it; fill it in or drop the "
                           "question", f"{field}.{name}", qid)
    evidence = _evidence(raw, turns, record, f"{field}.evidence", qid)
    return LocomoQuestion(qid, record.index, text, str(answer), category, evidence, adversarial)


def _conversation(raw: object, index: int, mapping: str, source: str) -> LocomoConversation:
    sample = raw.get("sample_id") if isinstance(raw, Mapping) else None
    record = _Record(source, index, f"conversation {index}" + (f" ({sample})" if isinstance(sample, str) else ""))
    if not isinstance(raw, Mapping):
        raise record.error(f"must be an object with 'conversation' and 'qa', got {json_kind(raw)}: this is not a "
                           "LoCoMo file (a list of conversations like locomo10.json)")
    conversation = raw.get("conversation")
    if not isinstance(conversation, Mapping):
        if "question_id" in raw:
            raise record.error("is a LongMemEval question record, not a LoCoMo conversation: run it with "
                               "dataset=longmemeval (or check it with om-eval data check)")
        problem = "is missing" if "conversation" not in raw else f"must be an object, got {json_kind(conversation)}"
        raise record.error(f"{problem}: a LoCoMo record holds its sessions under 'conversation'", "conversation")
    speakers = (conversation.get("speaker_a"), conversation.get("speaker_b"))
    for name, speaker in zip(("speaker_a", "speaker_b"), speakers):
        if not isinstance(speaker, str) or not speaker.strip():
            problem = "is missing" if name not in conversation else f"must be a name, got {json_kind(speaker)}"
            raise record.error(f"{problem}: a conversation needs its two speakers", f"conversation.{name}")
    if speakers[0] == speakers[1]:
        raise record.error(f"is {speakers[1]!r}, the name of speaker_a too: the two speakers need two names",
                           "conversation.speaker_b")
    named = cast(tuple[str, str], speakers)  # two names (checked just above)
    sessions = _sessions(conversation, _roles(named, mapping), record)
    qa = raw.get("qa")
    if not isinstance(qa, list):
        problem = "is missing" if "qa" not in raw else f"must be a list of question objects, got {json_kind(qa)}"
        raise record.error(f"{problem}: write the conversation's questions as a list, [{{question, answer, evidence, "
                           "category}, ...]", "qa")
    if not qa:
        raise record.error("is empty: the conversation has no question, so nothing would be asked of it; give it its "
                           "questions or drop the conversation", "qa")
    turns = _turn_keys(sessions)
    questions = tuple(_question(q, i, turns, record) for i, q in enumerate(qa))
    return LocomoConversation(index, str(sample if sample is not None else index), named, sessions, questions)


def dialog_turns(conversation: LocomoConversation) -> frozenset[tuple[int, int]]:
    """(session, turn) of every turn's dialog id: what evidence can point at."""
    return _turn_keys(conversation.sessions)


def _turn_keys(sessions: Sequence[LocomoSession]) -> frozenset[tuple[int, int]]:
    return frozenset(key for s in sessions for t in s.turns for key in evidence_turns([t.dia_id]))


def unresolved_evidence(evidence: Sequence[str], turns: frozenset[tuple[int, int]]) -> str | None:
    """Why ``evidence`` points nowhere, or ``None``. The rule: evidence that cites something must name at least one
    of ``turns``. An empty list passes (four open-domain questions of the real file cite none), and so does a list
    where some ids name no turn, as long as one does (the real file has two such ids; ``om-eval data check`` lists
    them): their turns would be missing from what the oracle reader sees, not all of it."""
    if not evidence or not evidence_turns(evidence).isdisjoint(turns):
        return None
    shown = ", ".join(map(repr, evidence[:5])) + (", ..." if len(evidence) > 5 else "")
    first, last = min(turns, default=(0, 0)), max(turns, default=(0, 0))
    return (f"none of [{shown}] names a turn of this conversation (its turns run D{first[0]}:{first[1]} to "
            f"D{last[0]}:{last[1]}), so the oracle reader would see none of its evidence")


def loose_evidence(conversation: LocomoConversation) -> list[tuple[str, str, str]]:
    """What :func:`unresolved_evidence` lets through, for ``om-eval data check`` to list: ``(question id, kind,
    text)`` with kind ``none`` (the question cites no evidence), ``malformed`` (an entry that is not one plain
    dialog id, read as the ids in it) or ``dangling`` (a dialog id that names no turn; nothing is marked for it)."""
    turns = dialog_turns(conversation)
    notes = []
    for question in conversation.questions:
        if not question.evidence:
            notes.append((question.id, "none", ""))
        for text in question.evidence:
            if not _PLAIN_ID.match(text):
                notes.append((question.id, "malformed", text))
            notes += [(question.id, "dangling", f"D{s}:{t}") for s, t in sorted(evidence_turns([text]) - turns)]
    return notes


def read_locomo(
    path: str | os.PathLike[str] | None = None, *, verify: bool = True, speaker_roles: str = "a_user",
) -> tuple[Path, list[LocomoConversation]]:
    """:func:`load_locomo` with the file it read."""
    found, records = read_pinned_json(path, env=ENV_PATH, file_name=LOCOMO_FILE, sha256=LOCOMO_SHA256,
                                      what="LoCoMo file", origin=ORIGIN, verify=verify, url=LOCOMO_URL,
                                      given_by=f"dataset.path or ${ENV_PATH}")
    if not isinstance(records, list):
        raise LocomoValidationError(found.name, f"must hold a JSON list of conversations, got {json_kind(records)}: "
                                    "this is not a LoCoMo file (locomo10.json)")
    if not records:
        raise LocomoValidationError(found.name, "holds no conversation (an empty list): point dataset.path at a "
                                    "LoCoMo file with at least one, e.g. locomo10.json, or check that the file was "
                                    "written completely")
    return found, [_conversation(raw, index, speaker_roles, found.name) for index, raw in enumerate(records)]


def load_locomo(
    path: str | os.PathLike[str] | None = None, *, verify: bool = True, speaker_roles: str = "a_user",
) -> list[LocomoConversation]:
    """Every conversation of a LoCoMo file, checked.

    Args:
        path: the file (or a folder holding ``locomo10.json``); default ``$LOCOMO_PATH``, else the pinned file
            downloaded once into om-eval's data cache (:data:`LOCOMO_URL`, checked against its sha256).
        verify: check a file named ``locomo10.json`` against the pinned sha256 first.
        speaker_roles: which speaker is the user: ``a_user`` or ``b_user``.

    Raises:
        FileNotFoundError: no file given or found (the message says how to provide it).
        LocomoValidationError: the file is empty, or a record breaks the format (a :class:`DatasetValidationError`
            naming the file, the conversation, the question and the field), or a question's evidence names no turn
            of its conversation (:func:`unresolved_evidence`).
    """
    return read_locomo(path, verify=verify, speaker_roles=speaker_roles)[1]
