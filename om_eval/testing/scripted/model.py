"""A deterministic offline model for tests and demos. Not a language model: a rule-based stand-in.

It reads the prompts OM sends and answers in the expected shape, so the whole engine can run end to end with no
network and no weights:

* as the **Observer** it turns each user message into dated ``User stated`` / ``User asked`` lines (and each
  assistant message into a short 🟡 line), grouped under ``Date:`` headers, per thread when asked; questions get
  the marker the system prompt's variant asks for (🔴 for ``current``, 🟡 for the others or an unknown prompt);
* as the **Reflector** it shortens every observation line to a word budget that shrinks with the compression
  level it is asked for, and drops low-priority lines at higher levels;
* as the **actor** it answers with the observation line that shares the most words with the question;
* as a **judge** (a prompt with ``<label>: <reference>`` and ``Response: <answer>`` sections asking for yes or no)
  it says yes when the response contains the reference answer's words, or, for an unanswerable question,
  when the response admits it does not know; as BEAM's house judge it scores rubric items and compares events by
  shared words (:mod:`om_eval.testing.scripted.rubric`).

It can be told to misbehave, per stage, in order: ``ScriptedModel(faults={"observer": ["degenerate"]})`` makes
the first Observer call return a repetition loop and later calls behave. Faults: ``degenerate``,
``missing_tags`` (list lines without XML), ``prose`` (text with no tags and no list lines), ``empty``,
``no_compression`` (the Reflector echoes its input), ``repeat`` (the Observer copies the observation lines of the
previous observations it was shown, in every thread, and ignores the new messages; with none shown it answers
normally), and provider errors that raise :class:`ScriptedModelError`
with an HTTP status: ``error``/``server_error`` (500), ``rate_limit`` (429), ``timeout`` (408), ``bad_request``
(400), ``auth_error`` (401).

It remembers only its most recent calls in full (``history``, 64 by default) and counts all of them per stage
(``call_counts``): one shared instance answers every call of a long run, and keeping every prompt it ever saw
cost over a gigabyte on a 500-question run. ``history=None`` keeps every call, for tests that need them all.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from om_eval.llm.stand_in import StandInError, content_text, registered_responders
from om_eval.om.anchors import strip_anchor_ids
from om_eval.om.config import ModelSettings
from om_eval.om.model import ChatMessage, ModelReply, Stage
from om_eval.om.observer import question_emoji_of
from om_eval.om.prompts import load_prompts
from om_eval.simple_om.llm_observer import buffer_of
from om_eval.testing.scripted.recall import TOOL_FAULTS, offers_recall, plan_calls, tool_result_lines
from om_eval.testing.scripted.rubric import is_rubric_judging, rubric_judge_reply
from om_eval.testing.scripted.structured import last_user_text, scripted_logprobs, structured_reply

#: Faults that raise :class:`ScriptedModelError`, with the HTTP status a real provider would answer.
ERROR_FAULTS = {
    "error": 500,
    "server_error": 500,
    "rate_limit": 429,
    "timeout": 408,
    "bad_request": 400,
    "auth_error": 401,
}
#: Faults of an actor offered the recall tool: :data:`om_eval.testing.scripted.recall.TOOL_FAULTS`.
FAULTS = ("degenerate", "missing_tags", "prose", "empty", "no_compression", "repeat", "cut_off", *TOOL_FAULTS,
          *ERROR_FAULTS)
#: Lines of the previous observations a ``repeat`` fault copies.
REPEAT_LINES = 8
#: Calls kept in full (messages and reply) by default; older ones are only counted.
DEFAULT_HISTORY = 64
DONT_KNOW = "I don't know: nothing in my memory answers that."
#: Words kept per observation line at each compression level.
WORDS_PER_LEVEL = {0: 18, 1: 13, 2: 9, 3: 6, 4: 4}

_HEADER = re.compile(
    r"^\*\*(?P<role>[A-Za-z]+) \((?P<time>[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d{2} [AP]M)\):\*\*$", re.MULTILINE
)
#: 1.15+'s history lines (``mastra_release=v1_31``): ``Mar 5 2024:`` then ``User (2:21 PM): text`` or ``User: text``.
_DAY_LINE = re.compile(r"^(?P<month>[A-Z][a-z]{2}) (?P<day>\d{1,2}) (?P<year>\d{4}):$")
_PART_LINE = re.compile(
    r"^(?P<role>User|Assistant|System|Tool)(?: \((?P<time>\d{1,2}:\d{2} [AP]M)\))?: (?P<text>.*)$"
)
_TIMED_MESSAGE = re.compile(r"^\d{1,2}:\d{2} [AP]M: (?P<message>\{.*\})$")
_THREAD = re.compile(r'<thread id="(?P<id>[^"]+)">\n(?P<body>.*?)\n</thread>', re.DOTALL)
_SENTENCE = re.compile(r"[^.!?]+[.!?]?")
_OBS_LINE = re.compile(r"^(?P<indent>\s*)\* (?P<emoji>🔴|🟡|🟢|✅) \((?P<time>\d{2}:\d{2})\) (?P<text>.*)$")
_WORD = re.compile(r"[a-z0-9']+")
_STOPWORDS = frozenset(
    "a an the i my me you your is are was were do did does what which who when where how to of in on for "
    "and or with at by from about have has had be been it that this there user stated asked".split()
)


_JUDGE_PROMPT = re.compile(
    r"\n\n(?P<label>[A-Z][\w ]{2,40}): (?P<reference>(?:(?!\n\n[A-Z][\w ]{2,40}: ).)*?)"
    r"\n\n(?:Model )?Response: (?P<response>.*?)\n\n(?=[^\n]*\byes or no\b)",
    re.DOTALL,
)
_DONT_KNOW = ("don't know", "do not know", "not sure", "no information", "cannot answer", "can't answer",
              "not mentioned", "nothing in my memory")


class ScriptedModelError(StandInError):
    """A fault the scripted model was told to raise; ``status_code`` is what a provider would answer."""

    def __init__(self, message: str, status_code: int = 500) -> None:
        super().__init__(message, status_code)


@dataclass
class ScriptedCall:
    """One call as the scripted model saw it."""

    stage: str
    messages: list[dict[str, str]]
    fault: str | None
    reply: str


def _approx_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _first_sentences(text: str, count: int, max_words: int) -> list[str]:
    sentences = [s.strip() for s in _SENTENCE.findall(" ".join(text.split())) if s.strip()]
    return [" ".join(s.split()[:max_words]) for s in sentences[:count]]


def _parse_lines(history: str) -> list[tuple[str, datetime, str]]:
    """(role, time, content) for every part line of a 1.15+ history (a line without a title continues a part)."""
    parts: list[tuple[str, datetime, str]] = []
    day, time = None, None
    for line in history.splitlines():
        if (found := _DAY_LINE.match(line)) is not None:
            day, time = f"{found['month']} {found['day']} {found['year']}", None
        elif (found := _PART_LINE.match(line)) is not None and day is not None:
            time = found["time"] or time or "12:00 AM"
            when = datetime.strptime(f"{day} {time}", "%b %d %Y %I:%M %p")
            parts.append((found["role"].lower(), when, found["text"]))
        elif parts and line.strip():
            role, when, text = parts[-1]
            parts[-1] = (role, when, f"{text}\n{line}")
    return parts


def _parse_history(history: str) -> list[tuple[str, datetime, str]]:
    """(role, time, content) for every ``**Role (time):**`` block of a formatted history, or every part line of
    one in 1.15+'s line format."""
    headers = list(_HEADER.finditer(history))
    if not headers:
        return _parse_lines(history)
    messages = []
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(history)
        content = history[header.end() : end].strip()
        content = re.sub(r"\n\n---\s*$", "", content).strip()
        when = datetime.strptime(header.group("time"), "%b %d, %Y, %I:%M %p")
        messages.append((header.group("role").lower(), when, content))
    return messages


def _observation_lines(messages: Sequence[tuple[str, datetime, str]], question_emoji: str) -> str:
    lines: list[str] = []
    current_date = None
    for role, when, content in messages:
        header = f"Date: {when:%b} {when.day}, {when.year}"
        if header != current_date:
            lines.append(header)
            current_date = header
        stamp = f"({when:%H:%M})"
        if role == "user":
            for sentence in _first_sentences(content, 2, 40):
                if sentence.endswith("?"):
                    lines.append(f"* {question_emoji} {stamp} User asked: {sentence}")
                else:
                    lines.append(f"* 🔴 {stamp} User stated: {sentence}")
        elif role == "assistant":
            for sentence in _first_sentences(content, 1, 14):
                lines.append(f"* 🟡 {stamp} Assistant replied: {sentence}")
    return "\n".join(lines)


def _previous_lines(request: str, heading: str) -> str | None:
    """The first observation lines (with their ``Date:`` headers) of the previous observations section, or None."""
    if heading not in request:
        return None
    section = request.split(heading, 1)[1].split("\n\n---", 1)[0]
    lines: list[str] = []
    bullets = 0
    for line in section.strip().splitlines():
        if line.startswith("Date:"):
            lines.append(line)
        elif _OBS_LINE.match(line.strip()) and bullets < REPEAT_LINES:
            lines.append(line.strip())
            bullets += 1
    while lines and lines[-1].startswith("Date:"):
        lines.pop()
    return "\n".join(lines) if bullets else None


def _compress(observations: str, level: int) -> str:
    limit = WORDS_PER_LEVEL[level]
    kept: list[str] = []
    seen: set[str] = set()
    for line in observations.splitlines():
        match = _OBS_LINE.match(line)
        if match is None:
            if line.strip() and (not kept or kept[-1] != line):
                kept.append(line)
            continue
        emoji = match.group("emoji")
        if (level >= 2 and emoji == "🟢") or (level >= 3 and emoji == "🟡"):
            continue
        text = " ".join(match.group("text").split()[:limit])
        if text in seen:
            continue
        seen.add(text)
        kept.append(f"{match.group('indent')}* {emoji} ({match.group('time')}) {text}")
    return "\n".join(kept)


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s", "e", "d"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _content_words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 2}


@dataclass
class ScriptedModel:
    """The offline stand-in model. ``faults`` maps a stage to the faults of its next calls, in order."""

    faults: Mapping[str, Sequence[str]] = field(default_factory=dict)
    latency: float = 0.0
    name: str = "scripted/om-eval"
    history: int | None = DEFAULT_HISTORY
    """How many of the most recent calls ``calls`` keeps in full; ``None`` keeps all of them (memory then grows
    with every prompt), 0 none. ``call_counts`` counts every call either way."""
    calls: deque[ScriptedCall] = field(init=False, repr=False, compare=False)
    """The most recent calls, oldest first (at most ``history``)."""
    call_counts: Counter[str] = field(init=False, repr=False, compare=False)
    """Calls per stage since the model was made, faults included."""

    def __post_init__(self) -> None:
        for stage, faults in self.faults.items():
            for fault in faults:
                if fault not in FAULTS:
                    raise ValueError(f"scripted fault {fault!r} for {stage} is unknown: use one of {', '.join(FAULTS)}")
        if self.history is not None and (isinstance(self.history, bool) or not isinstance(self.history, int)
                                         or self.history < 0):
            raise ValueError(f"history={self.history!r} is invalid: a number of calls >= 0, or None to keep all")
        self._pending = {stage: list(faults) for stage, faults in self.faults.items()}
        self.calls = deque(maxlen=self.history)
        self.call_counts = Counter()
        self._lock = threading.Lock()

    @property
    def total_calls(self) -> int:
        """Every call since the model was made (``calls`` may hold fewer)."""
        return sum(self.call_counts.values())

    async def complete(
        self, messages: Sequence[ChatMessage], *, stage: Stage, settings: ModelSettings,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> ModelReply:
        if self.latency:
            await asyncio.sleep(self.latency)
        offered: dict[str, Any] = {"tools": tools} if tools else {}  # subclasses written before tools keep working
        return self.reply(messages, stage=stage, model=settings.model, **offered)

    def reply(self, messages: Sequence[ChatMessage], *, stage: str | None = None, model: str | None = None,
              tools: Sequence[Mapping[str, Any]] | None = None, response_format: Mapping[str, Any] | None = None,
              logprobs: bool | None = None, top_logprobs: int | None = None) -> ModelReply:
        """Answer synchronously (used by the async path and by the litellm provider wrapper). Offered the recall
        tool, an actor calls it as :mod:`om_eval.testing.scripted.recall` plans. A system's registered responder
        (:func:`~om_eval.llm.stand_in.register_responder`) is asked first; JSON mode or a schema is answered with
        valid JSON (:mod:`~om_eval.testing.scripted.structured`); ``logprobs`` adds per-token log probabilities."""
        reply = self._reply(messages, stage=stage, model=model, tools=tools, response_format=response_format)
        if not logprobs:
            return reply
        return replace(reply, logprobs=tuple(scripted_logprobs(reply.text, top_logprobs)))

    def _reply(self, messages: Sequence[ChatMessage], *, stage: str | None, model: str | None,
               tools: Sequence[Mapping[str, Any]] | None, response_format: Mapping[str, Any] | None) -> ModelReply:
        stage = stage or detect_stage(messages)
        if response_format is not None or registered_responders():
            plain = [{"role": str(m["role"]), "content": content_text(m.get("content"))} for m in messages]
            request = {"response_format": response_format, "tools": tools}
            text = next((t for r in registered_responders() if (t := r(plain, request)) is not None), None)
            if text is None and response_format is not None:
                text = structured_reply(response_format, last_user_text(plain))
            if text is not None:
                with self._lock:
                    self.call_counts[stage] += 1
                self._remember(ScriptedCall(stage, plain, None, text))
                return ModelReply(text, model or self.name, prompt_tokens=sum(_approx_tokens(m["content"])
                                                                              for m in plain),
                                  completion_tokens=_approx_tokens(text), finish_reason="stop")
        with self._lock:
            queue = self._pending.get(stage)
            fault = queue.pop(0) if queue else None
            self.call_counts[stage] += 1
        plain = [{"role": str(m["role"]), "content": content_text(m.get("content"))} for m in messages]
        if fault in ERROR_FAULTS:
            self._remember(ScriptedCall(stage, plain, fault, ""))
            raise ScriptedModelError(f"scripted {stage} fault: simulated {fault}", ERROR_FAULTS[fault])
        if stage in ("actor", "recall") and offers_recall(tools):
            question = next((m["content"] for m in reversed(plain) if m["role"] == "user"), "")
            calls = plan_calls(messages, question, _shared_words, fault)
            if calls:
                self._remember(ScriptedCall(stage, plain, fault, ""))
                prompt = sum(_approx_tokens(m["content"]) for m in plain)
                return ModelReply("", model or self.name, prompt_tokens=prompt, completion_tokens=10 * len(calls),
                                  finish_reason="tool_calls", tool_calls=tuple(calls))
            asked = max(i for i, m in enumerate(plain) if m["role"] == "user") if question else len(plain) - 1
            # The observations answer when they can; the raw lines read with recall fill in when they cannot.
            memory_lines = _memory_lines(plain[:asked])
            text = _best_line(question, memory_lines)
            if text == DONT_KNOW:
                text = _best_line(question, tool_result_lines(messages) + memory_lines)
        else:
            text = self._answer(plain, stage, fault)
        finish_reason = "stop"
        if fault == "cut_off":  # a provider that hit max_tokens: the reply's first half, flagged as such
            text, finish_reason = text[: max(1, len(text) // 2)], "length"
        self._remember(ScriptedCall(stage, plain, fault, text))
        prompt = sum(_approx_tokens(m["content"]) for m in plain)
        return ModelReply(text, model or self.name, prompt_tokens=prompt, completion_tokens=_approx_tokens(text),
                          finish_reason=finish_reason)

    def _remember(self, call: ScriptedCall) -> None:
        if self.history != 0:
            self.calls.append(call)

    def calls_for(self, stage: str) -> list[ScriptedCall]:
        """The remembered calls of ``stage`` (see ``history``); ``call_counts[stage]`` counts them all."""
        return [c for c in self.calls if c is not None and c.stage == stage]

    # -- behaviours -----------------------------------------------------------------------------------------

    def _answer(self, messages: list[dict[str, str]], stage: str, fault: str | None) -> str:
        if fault == "degenerate":
            # 100 copies: 1.10's window sampler then lands on the same phase of every copy, in UTF-16 units as in JS
            # and in code points alike, so the loop is flagged (120 copies are not flagged by 1.10).
            return "* 🔴 (09:00) User stated the same thing again and again.\n" * 100
        if fault == "empty":
            return ""
        if fault == "prose":
            # The "no" inside is deliberate: a judge parse that took it for a verdict would score this as wrong.
            return "I looked at the conversation and there is no reply in the requested format to give here."
        if stage == "observer":
            return self._observe(messages, fault)
        if stage == "reflector":
            return self._reflect(messages, fault)
        if stage == "judge" and _JUDGE_PROMPT.search(messages[-1]["content"] if messages else ""):
            return self._judge(messages[-1]["content"])
        if stage == "judge" and (judged := rubric_judge_reply(messages, _content_words)) is not None:
            return judged
        return self._act(messages)

    def _judge(self, prompt: str) -> str:
        match = _JUDGE_PROMPT.search(prompt)
        assert match is not None
        label, reference, response = match.group("label"), match.group("reference"), match.group("response")
        lowered = response.lower()
        asked = label + " " + prompt[: match.start()]
        if re.search(r"cannot be answered|unanswerable|explanation", asked, re.IGNORECASE) \
                and "answer" not in label.lower().replace("answered", ""):
            return "yes" if any(p in lowered for p in _DONT_KNOW) else "no"
        if reference.strip().isdigit():
            return "yes" if re.search(rf"\b{reference.strip()}\b", response) else "no"
        if reference.strip().lower() in lowered:
            return "yes"
        wanted = _content_words(reference) or {reference.strip().lower()}
        found = _content_words(response)
        return "yes" if len(wanted & found) >= max(1, (len(wanted) + 1) // 2) else "no"

    def _observe(self, messages: list[dict[str, str]], fault: str | None) -> str:
        if (buffer := buffer_of(messages)) is not None:
            return _simple_facts(buffer)
        texts = load_prompts("observer_request")
        user = "\n\n".join(m["content"] for m in messages if m["role"] == "user")
        history = user.split(texts["history_heading"], 1)[-1].split(texts["task_heading"], 1)[0]
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        question_emoji = question_emoji_of(system) or "🟡"
        threads = list(_THREAD.finditer(history))
        copied = _previous_lines(user, texts["previous_observations_heading"]) if fault == "repeat" else None
        if threads:
            blocks = []
            for thread in threads:
                body = copied or _observation_lines(_parse_history(thread.group("body")), question_emoji)
                blocks.append(
                    f'<thread id="{thread.group("id")}">\n{body}\n'
                    "<current-task>\nPrimary: follow up on what the user shared in this thread\n</current-task>\n"
                    "</thread>"
                )
            inner = "\n".join(blocks)
        else:
            inner = copied or _observation_lines(_parse_history(history), question_emoji)
        if fault == "missing_tags":
            return re.sub(r"</?(observations|thread)[^>]*>\n?", "", inner)
        tail = "" if threads else (
            "\n<current-task>\nPrimary: continue helping with the user's latest request\n</current-task>\n"
            "<suggested-response>\nAcknowledge the latest message and ask how to continue.\n</suggested-response>"
        )
        return f"<observations>\n{inner}\n</observations>{tail}"

    def _reflect(self, messages: list[dict[str, str]], fault: str | None) -> str:
        texts = load_prompts("reflector")
        request = messages[-1]["content"]
        body = request.split(texts["request_heading"], 1)[-1].split("\n\n---\n\n", 1)[0]
        observations = strip_anchor_ids(body).strip()
        if fault == "no_compression":
            return f"<observations>\n{observations}\n</observations>"
        level = compression_level_of(request)
        compressed = _compress(observations, level)
        if fault == "missing_tags":
            return compressed
        return f"<observations>\n{compressed}\n</observations>"

    def _act(self, messages: list[dict[str, str]]) -> str:
        question = messages[-1]["content"] if messages else ""
        lines = _memory_lines(messages[:-1])
        if len(messages) == 1 and "Question:" in question:  # a reader prompt carrying its own history
            history, _, question = question.rpartition("Question:")
            question = question.split("\nAnswer", 1)[0]
            lines = _inline_history_lines(history)
        return _best_line(question, lines)


def _simple_facts(buffer: str) -> str:
    """One fact per buffered text: its first sentence, as the simple layer's observer is asked to write."""
    facts = [sentence for entry in buffer.split("\n\n") for sentence in _first_sentences(entry, 1, 30)]
    return "\n".join(facts)


def _shared_words(question: str, text: str) -> int:
    return len(_content_words(question.split("Question:", 1)[-1]) & _content_words(text))


def _best_line(question: str, lines: Sequence[str]) -> str:
    """The line sharing the most content words with the question (ties: the later line), or a refusal."""
    wanted = _content_words(question.split("Question:", 1)[-1])
    needed = 1 if len(wanted) <= 2 else 2
    best, best_score = None, 0
    for line in lines:
        score = len(wanted & _content_words(line))
        if score >= needed and score >= best_score:  # ties go to the later, more recent line
            best, best_score = line, score
    if best is None:
        return DONT_KNOW
    return re.sub(r"^(?:🔴|✅)?\s*(?:\(\d{2}:\d{2}\)\s*)?", "", best)


def _inline_history_lines(history: str) -> list[str]:
    """User turns of a history written into one prompt: JSON turn lists (``[{"role": ..., "content": ...}]``)
    or ``user: text`` blocks, in order (the baseline reader's layouts)."""
    lines: list[str] = []
    for line in history.splitlines():
        text = line.strip()
        if text.startswith("[{"):
            try:
                turns = json.loads(text)
            except ValueError:
                continue
            lines += [str(t.get("content", "")) for t in turns if isinstance(t, dict) and t.get("role") == "user"]
        elif text.startswith("user: "):
            lines.append(text[len("user: "):])
    return [line for text in lines for line in text.splitlines() if line.strip()]


def _memory_lines(messages: Sequence[Mapping[str, str]]) -> list[str]:
    """Observation bullets and raw conversation lines; instructions and reminders are not memory."""
    lines: list[str] = []
    for message in messages:
        if message["content"].lstrip().startswith("<system-reminder>"):
            continue
        raw_turn = False
        for line in message["content"].splitlines():
            text = line.strip()
            if _HEADER.match(text):
                raw_turn = text.startswith("**User")
                continue
            if (timed := _TIMED_MESSAGE.match(text)) is not None:  # a recalled message (memory=rag_mastra)
                recalled = json.loads(timed["message"])
                if recalled.get("role") == "user":
                    lines += [part for part in str(recalled.get("content", "")).splitlines() if part.strip()]
                continue
            if (part := _PART_LINE.match(text)) is not None:
                raw_turn = part["role"] == "User"
                text = part["text"]
            if text.startswith(("* ", "- ")) and not text.startswith("- Carry"):
                lines.append(text.lstrip("*- ").strip())
            elif raw_turn and text and not text.startswith(("<", "END_", "---")):
                lines.append(text)
    return lines


def detect_stage(messages: Sequence[ChatMessage]) -> str:
    """Tell observer, reflector, judge, actor and recall (an actor after tool results) requests apart by the headings
    our prompts use (Mastra's own prompts, ``prompt=mastra_exact``, use the same headings)."""
    joined = "\n".join(content_text(m.get("content")) for m in messages)
    if load_prompts("observer_request")["history_heading"] in joined or buffer_of(messages) is not None:
        return "observer"
    if load_prompts("reflector")["request_heading"] in joined:
        return "reflector"
    if len(messages) == 1 and _JUDGE_PROMPT.search(joined):
        return "judge"
    if is_rubric_judging([{"role": str(m["role"]), "content": content_text(m.get("content"))} for m in messages]):
        return "judge"
    if any(m.get("role") == "tool" for m in messages):
        return "recall"  # an actor's round after tool results
    return "actor"


def compression_level_of(request: str) -> int:
    """The compression level a Reflector request asks for (0 when it carries no guidance)."""
    compression = load_prompts("reflector")["compression"]
    for level in (4, 3, 2, 1):
        if compression[f"level_{level}"].splitlines()[0] in request:
            return level
    return 0
