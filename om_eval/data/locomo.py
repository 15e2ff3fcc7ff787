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
  malformed ones (``D:11:26``, ``D8:6; D9:17``) as their dialog ids.
* **As benchmark questions** (:mod:`om_eval.data.locomo_questions`): every question of a conversation shares one
  haystack (``haystack_id`` ``locomo_<conversation index>``), so one memory answers them all; the question is asked
  :data:`QUESTION_DELAY` after the conversation's last turn (LoCoMo gives questions no date).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal, cast

from om_eval.data.reading import DatasetValidationError, read_pinned_json
from om_eval.om.config import ConfigError, option_error

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
    "evidence_turns",
    "haystack_id",
    "load_locomo",
    "parse_session_time",
    "question_id",
    "read_locomo",
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
    match = _SESSION_TIME.match(text) if isinstance(text, str) else None
    month = _MONTHS.get(match.group(5).lower()) if match else None
    if match is None or month is None:
        raise ValueError(f"{where}: date and time {text!r} is not like '1:56 pm on 8 May, 2023'")
    hour, minute = int(match.group(1)) % 12, int(match.group(2))
    if match.group(3).lower() == "pm":
        hour += 12
    return datetime(int(match.group(6)), month, int(match.group(4)), hour, minute)


def _roles(speakers: tuple[str, str], mapping: str) -> dict[str, str]:
    if mapping not in SPEAKER_ROLES:
        raise option_error("dataset.speaker_roles", f"={mapping!r} is invalid: allowed values are "
                           f"{', '.join(SPEAKER_ROLES)}")
    user, assistant = speakers if mapping == "a_user" else speakers[::-1]
    return {user: "user", assistant: "assistant"}


def _turn(raw: Mapping[str, Any], roles: Mapping[str, str], at: datetime, where: str) -> LocomoTurn:
    speaker = raw.get("speaker")
    if speaker not in roles:
        raise ValueError(f"{where}: speaker {speaker!r} is neither of the conversation's two speakers")
    speaker = cast(str, speaker)  # one of roles' keys (checked just above)
    dia_id, text = raw.get("dia_id"), raw.get("text")
    if not isinstance(dia_id, str) or not isinstance(text, str):
        raise ValueError(f"{where}: a turn needs a text 'dia_id' and 'text'")
    caption = raw.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        text = f"{text} [image: {caption.strip()}]" if text.strip() else f"[image: {caption.strip()}]"
    return LocomoTurn(dia_id, speaker, roles[speaker], text, at)


def _sessions(conversation: Mapping[str, Any], roles: Mapping[str, str], where: str) -> tuple[LocomoSession, ...]:
    numbers = sorted(int(m.group(1)) for key in conversation if (m := _SESSION_KEY.match(key)))
    sessions = []
    for number in numbers:
        raw = conversation[f"session_{number}"]
        place = f"{where} session_{number}"
        if not isinstance(raw, list):
            raise ValueError(f"{place}: expected a list of turns")
        date_text = conversation.get(f"session_{number}_date_time")
        started = parse_session_time(date_text, where=f"{place}_date_time")
        turns = tuple(_turn(t, roles, started + timedelta(seconds=TURN_SPACING_SECONDS * i), f"{place} turn {i}")
                      for i, t in enumerate(raw))
        # parse_session_time read date_text, so it is a str.
        sessions.append(LocomoSession(number, cast(str, date_text), started, turns))
    if not sessions:
        raise ValueError(f"{where}: no sessions")
    return tuple(sessions)


def _question(raw: Mapping[str, Any], conversation: int, index: int, where: str) -> LocomoQuestion:
    category = raw.get("category")
    if category not in (1, 2, 3, 4, 5):
        raise ValueError(f"{where}: category {category!r} is not one of 1-5")
    adversarial = category == 5
    answer = raw.get("adversarial_answer", raw.get("answer")) if adversarial else raw.get("answer")
    if answer is None or not isinstance(raw.get("question"), str):
        field = "adversarial_answer" if adversarial else "answer"
        raise ValueError(f"{where}: needs 'question' and '{field}'")
    evidence = raw.get("evidence") or []
    return LocomoQuestion(question_id(conversation, index), conversation, raw["question"], str(answer), category,
                          tuple(str(e) for e in evidence), adversarial)


def _conversation(raw: Any, index: int, mapping: str, source: str) -> LocomoConversation:
    where = f"{source}: conversation {index}"
    try:
        conversation = raw["conversation"]
        speakers = (conversation["speaker_a"], conversation["speaker_b"])
        roles = _roles(speakers, mapping)
        sessions = _sessions(conversation, roles, where)
        questions = tuple(_question(q, index, i, f"{where} question {question_id(index, i)}")
                          for i, q in enumerate(raw["qa"]))
    except (KeyError, TypeError) as error:
        raise DatasetValidationError(source, f"conversation {index} lacks {error}", index=index) from None
    except ValueError as error:
        if isinstance(error, ConfigError):
            raise
        raise DatasetValidationError(source, str(error).removeprefix(f"{source}: "), index=index) from None
    return LocomoConversation(index, str(raw.get("sample_id", index)), speakers, sessions, questions)


def read_locomo(
    path: str | os.PathLike[str] | None = None, *, verify: bool = True, speaker_roles: str = "a_user",
) -> tuple[Path, list[LocomoConversation]]:
    """:func:`load_locomo` with the file it read."""
    found, records = read_pinned_json(path, env=ENV_PATH, file_name=LOCOMO_FILE, sha256=LOCOMO_SHA256,
                                      what="LoCoMo file", origin=ORIGIN, verify=verify, url=LOCOMO_URL,
                                      given_by=f"dataset.path or ${ENV_PATH}")
    if not isinstance(records, Sequence) or isinstance(records, str):
        raise DatasetValidationError(str(found), "expected a JSON list of conversations")
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
        DatasetValidationError: a record breaks the format (file, conversation and field named).
    """
    return read_locomo(path, verify=verify, speaker_roles=speaker_roles)[1]
