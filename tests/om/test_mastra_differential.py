"""Differential tests: om-eval's OM text helpers against Mastra's published ``@mastra/memory`` 1.10.0.

Why: the memory the Actor reads is produced by a dozen small text functions (date annotation, context
optimisation, observer-output parsing, anchors, truncation, boundaries). Reading the reference source is not
proof that a re-implementation behaves the same; running both on the same inputs is. This module installs the
package with npm (once per session, or once per ``$OM_EVAL_CACHE_DIR``), feeds seeded, generated inputs in one
batch to a small Node script of our own that calls the package's exported helpers, and compares every answer
with ours. Nothing of the package is copied here; it is only executed.

Reached through the package's public entry ``@mastra/memory/processors``: ``optimizeObservationsForContext``,
``parseObserverOutput`` (its degenerate flag and line cut too), ``injectAnchorIds``,
``stripEphemeralAnchorIds``, ``parseAnchorId``, ``getObservationsAsOf``, ``formatMessagesForObserver``, and
methods of the exported ``ObservationalMemory`` class called on a bare prototype instance (no storage or model
needed): ``formatObservationsForContext`` (with ``retrieval`` on it skips the optimisation and shows the
date annotation alone), ``splitObservationContextChunks``, ``createMessageBoundary``,
``truncateObservationsToTokenBudget`` and ``prepareObserverContext`` (both with a stand-in token counter,
``ceil(length / 4)``, on both sides, so the truncation logic is compared, not the estimator).

The oracle runs with ``TZ=UTC``: om-eval's naive datetimes are wall-clock times, which is what Mastra computes
in UTC. Marker ``mastra``; skipped, saying why, without node/npm or when the install fails (no registry).
"""

from __future__ import annotations

import math
import random
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest

from om_eval.om.anchors import inject_anchor_ids, parse_anchor_id, strip_anchor_ids
from om_eval.om.context import (
    ContextInputs,
    build_actor_context,
    optimize_for_context,
    split_observation_chunks,
)
from om_eval.om.dates import annotate_observations, format_boundary, observations_as_of
from om_eval.om.js.text import js_trim, utf16_len
from om_eval.om.observer import format_messages
from om_eval.om.parsing import is_degenerate, parse_observer_output, sanitize_lines
from om_eval.om.records import Message
from om_eval.om.truncation import (
    prepare_previous_observations,
    truncate_to_token_budget,
)
from tests.npm_oracle import NodeFolder, node_folder

pytestmark = pytest.mark.mastra

#: Exact pins: the package under test and the peers it imports at load time (@mastra/core 1.17.0 was
#: published together with @mastra/memory 1.10.0).
PACKAGES = {"@mastra/memory": "1.10.0", "@mastra/core": "1.17.0", "zod": "3.25.76"}
SEED = 20260330

# --------------------------------------------------------------------------- the oracle

#: A local-time ``Date`` from ``[year, month, day, hour, minute, second, ms]`` (both oracle scripts use it).
NODE_LOCAL = r"""
function local(parts) {
  const [y, mo, d, h = 0, mi = 0, s = 0, ms = 0] = parts;
  const date = new Date(2000, 0, 1);
  date.setFullYear(y, mo - 1, d);
  date.setHours(h, mi, s, ms);
  return date;
}
"""
_NODE_SCRIPT = r"""
// Written by om-eval's tests/om/test_mastra_differential.py: evaluates cases with @mastra/memory.
const om = await import("@mastra/memory/processors");
const OM = om.ObservationalMemory;
const bare = Object.create(OM.prototype);

const quarterCounter = {
  countString: (text) => Math.ceil(text.length / 4),
  countObservations: (text) => Math.ceil(text.length / 4),
};
const handlers = {
  optimizeObservationsForContext: (text) => om.optimizeObservationsForContext(text),
  addRelativeTimeToObservations: (text, now) =>
    OM.prototype.formatObservationsForContext
      .call(bare, text, undefined, undefined, undefined, local(now), true)
      .slice(1),
  formatObservationsForContext: (text, now, task, suggested) =>
    OM.prototype.formatObservationsForContext
      .call(bare, text, task ?? undefined, suggested ?? undefined, undefined, local(now), false)
      .slice(1),
  splitObservationContextChunks: (text) => OM.prototype.splitObservationContextChunks.call(bare, text),
  getObservationsAsOf: (text, asOf) => om.getObservationsAsOf(text, local(asOf)),
  createMessageBoundary: (at) => OM.createMessageBoundary(local(at)),
  parseObserverOutput: (text) => {
    const r = om.parseObserverOutput(text);
    return {
      observations: r.observations,
      currentTask: r.currentTask ?? null,
      suggestedResponse: r.suggestedContinuation ?? null,
      threadTitle: r.threadTitle ?? null,
      degenerate: Boolean(r.degenerate),
    };
  },
  injectAnchorIds: (text) => om.injectAnchorIds(text),
  stripEphemeralAnchorIds: (text) => om.stripEphemeralAnchorIds(text),
  parseAnchorId: (text) => om.parseAnchorId(text),
  truncateObservationsToTokenBudget: (text, budget) =>
    OM.prototype.truncateObservationsToTokenBudget.call({ tokenCounter: quarterCounter }, text, budget),
  prepareObserverContext: (text, budget) => {
    const self = {
      observationConfig: { previousObserverTokens: budget ?? undefined },
      tokenCounter: quarterCounter,
      truncateObservationsToTokenBudget: OM.prototype.truncateObservationsToTokenBudget,
    };
    const r = OM.prototype.prepareObserverContext.call(self, text, undefined);
    return [r.context ?? null, r.wasTruncated];
  },
  formatMessagesForObserver: (messages, maxPartLength) =>
    om.formatMessagesForObserver(
      messages.map((m) => ({ ...m, createdAt: local(m.createdAt) })),
      maxPartLength ? { maxPartLength } : undefined,
    ),
};
"""
#: The end of every oracle script: runs ``[name, args]`` cases from stdin through its ``handlers``.
NODE_DISPATCH = r"""
let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = JSON.parse(input).map(([name, args]) => {
  try {
    return { ok: handlers[name](...args) };
  } catch (error) {
    return { error: String(error?.stack ?? error) };
  }
});
process.stdout.write(JSON.stringify(results));
"""


class Oracle(NodeFolder):
    """The installed package and our Node script."""

    def run(self, cases: list[tuple[str, list[Any]]], tz: str = "UTC") -> list[dict[str, Any]]:  # type: ignore[override]  # this oracle runs one script
        """Evaluate ``(reference function, args)`` cases in one Node process; one result dict per case."""
        return super().run(NODE_LOCAL + _NODE_SCRIPT + NODE_DISPATCH, cases, tz=tz)


@pytest.fixture(scope="session")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Oracle:
    found = node_folder(tmp_path_factory, "mastra-oracle", PACKAGES)
    return Oracle(found.node, found.folder, found.install_seconds)


# --------------------------------------------------------------------------- generated inputs

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
EMOJI = ["🔴", "🟡", "🟢", "✅", "😀", "👍🏽", "🇫🇷", "❤️", "⚠️", "🧪", "𝔘"]
ODD_SPACE = ["\u00a0", "\u2028", "\ufeff", "\x1c", "\x85", "\u3000", "\t", "\x0b"]
INTENTS = ["will visit", "will be moving", "plans to go", "is planning to fly", "is looking forward to", "is going to",
           "intends to", "wants to", "needs to", "is about to", "WILL START", "Plans To", "had", "wanted",
           "planted a willow", "visited", ""]
WORDS = ["tea", "beagle", "Toby", "museum", "Ana", "tickets", "vet", "Lisbon", "budget", "résumé", "naïve", "日本"]


def _js_parts(moment: datetime) -> list[int]:
    return [moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second,
            moment.microsecond // 1000]


def _month_word(rng: random.Random, month: int) -> str:
    name = MONTHS[month - 1]
    return rng.choice([name, name, name[:3], name[:3], "Sept" if month == 9 else name, name.lower(), name.upper(),
                       name[:3] + "xyz", "Foo", "Smarch", "Monday"])


def _random_now(rng: random.Random) -> datetime:
    """Question dates: any day of 1998-2032, biased to month ends, leap days and DST switch weeks."""
    year = rng.randint(1998, 2032)
    kind = rng.random()
    if kind < 0.25:
        month = rng.randint(1, 12)
        day = (datetime(year + (month == 12), month % 12 + 1, 1) - timedelta(days=rng.randint(1, 3))).day
    elif kind < 0.45:
        month, day = rng.choice([(3, rng.randint(8, 14)), (3, rng.randint(25, 31)), (10, rng.randint(25, 31)),
                                 (11, rng.randint(1, 7))])
    elif kind < 0.5 and year % 4 == 0:
        month, day = 2, 29
    else:
        month, day = rng.randint(1, 12), rng.randint(1, 28)
    return datetime(year, month, day, rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59),
                    rng.randint(0, 999) * 1000)


def _nearby(rng: random.Random, now: datetime) -> datetime:
    """A date a bucket-edge distance before or after ``now`` (midnight)."""
    offset = rng.choice([0, 1, 2, 6, 7, 13, 14, 29, 30, 59, 60, 364, 365, 366, 729, 730, 1500])
    offset += rng.choice([0, 0, -1, 1])
    if rng.random() < 0.25:
        offset = -offset
    return datetime(now.year, now.month, now.day) - timedelta(days=offset)


def _header(rng: random.Random, when: datetime) -> str:
    word = _month_word(rng, when.month) if rng.random() < 0.2 else rng.choice([MONTHS[when.month - 1],
                                                                                  MONTHS[when.month - 1][:3]])
    day = str(when.day) if rng.random() < 0.85 else rng.choice(["0", "32", "31", "30", f"{when.day:02d}"])
    year = f"{when.year:04d}" if rng.random() < 0.92 else rng.choice(["0049", "0050", "0000", "0099"])
    body = f"{word} {day}, {year}"
    roll = rng.random()
    if roll < 0.06:
        body = f"{when:%A}, {body}"  # with a weekday in front
    elif roll < 0.09:
        body = f"{body} ({when:%A})"
    elif roll < 0.12:
        body = f"{word} {day} {year}"
    lead = rng.choice(["Date: "] * 6 + ["Date:", "Date:  ", " Date: ", "date: ", "Date:\t"])
    tail = rng.choice([""] * 8 + [" ", "  ", "\t", "\r", " \u00a0"])
    return f"{lead}{body}{tail}"


def _clause_text(rng: random.Random, when: datetime) -> str:
    name, short = MONTHS[when.month - 1], MONTHS[when.month - 1][:3]
    later = MONTHS[when.month % 12]
    year, day = when.year, when.day
    part = rng.choice(["early", "mid", "late", "Early", "MID", "Late"])
    joiner = rng.choice([" ", "-", ""])
    return rng.choice([
        f"{name} {day}, {year}", f"{short} {day}, {year}", f"{short} {day} {year}", f"{name.lower()} {day}, {year}",
        f"{name.upper()} {day}, {year}", f"{short} {day}-{day + 1}, {year}", f"{short} {day}\u2013{day + 1}, {year}",
        f"{short} {day} - {day + 1}, {year}", f"{part}{joiner}{name} {year}", f"{part}-to-late {name} {year}",
        f"{part} to mid {name.lower()} {year}", f"{name} to early {later} {year}", f"{short} to {later} {year}",
        f"the weekend of {short} {day}, {year}", f"{short} {day}th, {year}", f"sometime in {year}",
        f"summer {year}", f"Q3 {year}", f"chocolate {name} {year}", f"Around {day}, {year} or {short} {day}, {year}",
        f"{short} 30, {year}", f"Feb 31, {year}", f"{_month_word(rng, when.month)} {day}, {year}",
        f"{short} {day}, {year} ", f"{short} {day},\n{year}", f"(roughly) {short} {day}, {year}",
    ])


def _clause(rng: random.Random, when: datetime) -> str:
    prefix = rng.choice(["meaning", "estimated", "Meaning", "ESTIMATED", "MeAnInG"])
    gap = rng.choice([" ", " ", "  ", "\t", "\n"])
    close = rng.choice([")", ")", ")", ") ", ")\t"])
    return f"({prefix}{gap}{_clause_text(rng, when)}{close}"


def _observation_line(rng: random.Random, now: datetime) -> str:
    bullet = rng.choice(["* ", "- ", "  * ", "1. ", "", "\t- "])
    marker = rng.choice(EMOJI[:4] + ["", rng.choice(EMOJI)])
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))
    line = f"{bullet}{marker} ({rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}) User {rng.choice(INTENTS)} {words}."
    if rng.random() < 0.45:
        line += " " + _clause(rng, _nearby(rng, now))
    if rng.random() < 0.1:
        line += " " + _clause(rng, _nearby(rng, now))
    return line


def _observations(rng: random.Random, now: datetime, lines: int) -> str:
    out: list[str] = []
    when = _nearby(rng, now) - timedelta(days=rng.randint(0, 60))
    header_share = rng.choice([0.2, 0.2, 0.5])
    for _ in range(lines):
        roll = rng.random()
        if roll < header_share:
            when += timedelta(days=rng.choice([0, 1, 2, 5, 8, 20, 45, 90, 400, -3]))
            out.append(_header(rng, when))
        elif roll < header_share + 0.07:
            out.append(rng.choice(["", "", "   ", "\t"]))
        else:
            out.append(_observation_line(rng, now))
    joiner = rng.choice(["\n"] * 6 + ["\r\n", "\r", "\n\n", "\u2028"])
    return joiner.join(out)


def _optimize_input(rng: random.Random) -> str:
    fragments = [
        "[O3] ", "[O2-N1] ", "  [O12]\t", "[o1] ", "🔴 ", "🟡 ", "🟢", "🟢\n", "✅ ", "😀", "👍🏽", "🇫🇷 ",
        "(14:30) ",
        "User likes tea", "called tool ", "[Tool Call: search]", "[5 items collapsed - ID: a1b2c3]",
        "[ 12 items collapsed]", "[items collapsed]", "[12 Items Collapsed]", "[7\nitems collapsed]",
        "[3 items collapsed", "[link](http://example.com)", "[Image #1: cat.png]", "[unclosed ", "] ", "[]",
        "[\nmulti\nline]", "[a [nested] b]", "->", " -> ", "\n->\n", "  ->", "-->", "   ", "  ", "\n", "\n\n",
        "\n\n\n", "\n\n\n\n", "\r\n", "\r\n\r\n\r\n", "\r", "\t", "* ", "- ", "Date: Dec 4, 2025",
        "[truncated 40 characters]", "[3 observations truncated here]", "résumé", "x" * rng.randint(50, 400),
    ] + ODD_SPACE
    return "".join(rng.choice(fragments) for _ in range(rng.randint(0, 30)))


def _boundary_text(rng: random.Random) -> tuple[str, list[datetime]]:
    base = datetime(rng.randint(2000, 2030), rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23))
    chunks = [rng.choice(["Date: Jan 1, 2025\n* a", "", "  ", "* b\n\n", "🔴 c", "\n\nd\n"])]
    stamps = []
    for _ in range(rng.randint(0, 5)):
        base += timedelta(hours=rng.randint(-30, 200), milliseconds=rng.randint(0, 999))
        stamps.append(base)
        iso = base.isoformat(timespec="milliseconds")
        iso = rng.choice([iso + "Z", iso + "Z", iso + "Z", iso, iso[:19] + "Z", iso[:19] + ".5Z", iso + "123Z",
                          "2025-02-30T10:00:00.000Z", "2025-13-01T00:00:00.000Z", "2025-01-01T24:00:00.000Z",
                          iso + "+02:00"])
        before, after = rng.choice([("\n\n", "\n\n"), ("\n\n", "\n\n"), ("\n", "\n\n"), ("\n\n\n", "\n\n\n"),
                                    ("\n\n", "\n")])
        chunks.append(f"{before}--- message boundary ({iso}) ---{after}")
        chunks.append(rng.choice(["Date: Jan 5, 2025\n* b", "", "   ", "* c 🔴", "x\n\n\n\ny"]))
    return "".join(chunks), stamps


def _observer_output(rng: random.Random, now: datetime) -> str:
    body = "\n".join(_observation_line(rng, now) if rng.random() < 0.85 else _header(rng, _nearby(rng, now))
                     for _ in range(rng.randint(0, 8)))
    open_tag = rng.choice(["<observations>", "<observations>", "  <observations>", "\t<OBSERVATIONS>",
                           "Here: <observations>"])
    close_tag = rng.choice(["</observations>", "</observations>", " </observations>", "</Observations>",
                            "- end </observations>", ""])
    parts = []
    if rng.random() < 0.3:
        parts.append(rng.choice(["Sure, here are the observations.", "I will list them:", "1. not a list?"]))
    parts += [open_tag, body, close_tag]
    if rng.random() < 0.2:
        parts += ["<observations>", _observation_line(rng, now), "</observations>"]
    if rng.random() < 0.6:
        task = rng.choice(["Primary: plan the trip", "", "  ", "- step 1\n- step 2"])
        parts += [rng.choice(["<current-task>", " <current-task>", "see <current-task>"]), task,
                  rng.choice(["</current-task>", "x </current-task>"])]
    if rng.random() < 0.5:
        parts += ["<suggested-response>", rng.choice(["Ask about Lisbon", "", "Say hi 👋"]), "</suggested-response>"]
    if rng.random() < 0.4:
        parts.append(rng.choice(["<thread-title>Trip planning</thread-title>", "<thread-title>\nA\n</thread-title>",
                                 "  <thread-title></thread-title>", "x <thread-title>No</thread-title>"]))
    text = "\n".join(parts)
    return rng.choice([text, text, text, text.replace("\n", "\r\n"), text.replace("\n", "\r"),
                       text.replace("\n", rng.choice(["\r\n", "\n"]), rng.randint(0, 5))])


def _long_line(rng: random.Random, target: int) -> str:
    """A line of about ``target`` UTF-16 units, with emoji near the cut points."""
    pieces: list[str] = []
    length = 0
    while length < target:
        piece = rng.choice(["word ", "🔴", "😀", "é", "x" * rng.randint(1, 40), "日本 "])
        pieces.append(piece)
        length += utf16_len(piece)
    return "".join(pieces)


def _degenerate_input(rng: random.Random) -> str:
    unit = rng.choice(["* 🔴 (10:00) User asked about the weather again.\n", "same line\n", "😀" * 37 + "\n",
                       "- step -> retry\n", "ab"])
    repeats = rng.randint(5, 200)
    text = unit * repeats
    if rng.random() < 0.5:
        noise = "".join(rng.choice("abcdefgh 🟡\n") for _ in range(rng.randint(0, 3000)))
        text = noise + text if rng.random() < 0.5 else text + noise
    if rng.random() < 0.1:
        text += "\n" + _long_line(rng, rng.choice([49_990, 50_001, 50_010]))
    return text


def _anchor_input(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(0, 10)):
        indent = rng.choice(["", "", "  ", "    ", "\t", " ", "\u00a0\u00a0", "\u3000", "\t  "])
        body = rng.choice([
            "* 🔴 (10:00) User likes tea", "Date: Dec 4, 2025", "Date:Dec 4", '<thread id="t1">', "</observations>",
            "<b>bold</b>", "## Group `g1`", "_range: `a:b`_", "[O3] already", "[O3-N2]\tnested", "[o1] lower",
            "[O1-n2] odd", "", "   ", "-> step", "text\r", "\x1c", "\ufeff", "😀 emoji", "x [O4] inside",
        ])
        lines.append(indent + body)
    return "\n".join(lines)


def _truncation_input(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(1, 40)):
        marker = rng.choice(["🔴", "✅", "🟡", "🟢", "", ""])
        lines.append(f"* {marker} " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12))))
    return "\n".join(lines)


def _message(rng: random.Random, now: datetime) -> dict[str, Any]:
    moment = now - timedelta(minutes=rng.randint(0, 100_000))
    text = rng.choice(["Hi there", "I adopted a beagle named Toby 🐶", "line one\nline two", "x" * 80, "  padded  ",
                       "café ☕ at 9", "   "])
    if rng.random() < 0.5:
        content: Any = text
    else:
        content = {"format": 2, "parts": [{"type": "text", "text": t} for t in [text, rng.choice(WORDS)]
                                          [: rng.randint(1, 2)]]}
    return {"role": rng.choice(["user", "assistant"]), "createdAt": _js_parts(moment), "content": content}


# --------------------------------------------------------------------------- our side of each comparison


def quarter_tokens(text: str) -> int:
    """The stand-in token counter used on both sides: ``ceil(length / 4)`` in UTF-16 code units."""
    return math.ceil(utf16_len(text) / 4)


def _js_datetime(parts: list[int]) -> datetime:
    year, month, day, hour, minute, second, millis = parts
    return datetime(year, month, day, hour, minute, second, millis * 1000)


def _our_context(text: str, now: list[int], task: str | None, suggested: str | None) -> list[str]:
    inputs = ContextInputs(text, _js_datetime(now), current_task=task, suggested_response=suggested)
    messages = build_actor_context(inputs, "chunked")
    if messages and messages[-1]["role"] == "user":
        messages = messages[:-1]  # the continuation reminder is added elsewhere in Mastra
    return [message["content"] for message in messages[1:]]


def _our_annotation(text: str, now: list[int]) -> list[str]:
    chunks = split_observation_chunks(annotate_observations(text, _js_datetime(now)))
    return ["<observations>", *chunks] if chunks else []


def _our_observer_output(text: str) -> dict[str, Any]:
    parsed = parse_observer_output(text)
    return {
        "observations": parsed.observations,
        "currentTask": parsed.current_task,
        "suggestedResponse": parsed.suggested_response,
        "threadTitle": parsed.thread_title,
        "degenerate": parsed.degenerate,
    }


def _our_messages(specs: list[dict[str, Any]], max_part_length: int | None) -> str:
    messages = []
    for index, spec in enumerate(specs):
        content = spec["content"]
        if not isinstance(content, str):
            content = tuple({"type": "text", "text": part["text"]} for part in content["parts"])
        messages.append(Message(f"m{index}", "t", spec["role"], content, _js_datetime(spec["createdAt"])))
    return format_messages(messages, max_part_length)


@dataclass(frozen=True)
class Comparison:
    """One reference function, our counterpart (same arguments, JSON-shaped result) and its generated cases.

    ``known_difference`` names a difference whose fix lies outside the modules these tests cover; the comparison
    then runs as a strict xfail, so it fails once the fix lands and the mark must go.
    """

    reference: str
    ours: Callable[..., Any]
    cases: Callable[[random.Random], Iterator[list[Any]]]
    known_difference: str | None = None


def _repeat(count: int, make: Callable[[random.Random], list[Any]]) -> Callable[[random.Random], Iterator[list[Any]]]:
    def generate(rng: random.Random) -> Iterator[list[Any]]:
        for _ in range(count):
            yield make(rng)

    return generate


def _annotation_case(rng: random.Random) -> list[Any]:
    now = _random_now(rng)
    return [_observations(rng, now, rng.randint(0, 14)), _js_parts(now)]


def _context_case(rng: random.Random) -> list[Any]:
    now = _random_now(rng)
    text = _observations(rng, now, rng.randint(0, 8))
    if rng.random() < 0.5:
        text += _boundary_text(rng)[0] + _optimize_input(rng)
    task = rng.choice([None, "", "Plan the weekend", "  "])
    suggested = rng.choice([None, "Ask about Lisbon", ""])
    return [text, _js_parts(now), task, suggested]


def _as_of_case(rng: random.Random) -> list[Any]:
    text, stamps = _boundary_text(rng)
    cut = rng.choice(stamps) + timedelta(milliseconds=rng.choice([-1, 0, 1, 0])) if stamps else _random_now(rng)
    return [text, _js_parts(cut)]


def _boundary_case(rng: random.Random) -> list[Any]:
    return [_js_parts(_random_now(rng))]


def _sanitize_case(rng: random.Random) -> list[Any]:
    lines = [_long_line(rng, rng.choice([9_990, 9_999, 10_000, 10_001, 10_020])) for _ in range(rng.randint(1, 3))]
    lines.insert(rng.randint(0, len(lines)), "* 🔴 short line")
    return ["<observations>\n" + "\n".join(lines) + "\n</observations>"]


def _truncation_case(rng: random.Random) -> list[Any]:
    text = _truncation_input(rng)
    return [text, rng.randint(0, quarter_tokens(text) + 10)]


def _prepare_case(rng: random.Random) -> list[Any]:
    text = rng.choice(["", _truncation_input(rng)])
    return [text, rng.choice([None, False, 0, rng.randint(1, 200), 100_000])]


def _messages_case(rng: random.Random) -> list[Any]:
    now = _random_now(rng)
    return [[_message(rng, now) for _ in range(rng.randint(0, 4))], rng.choice([None, None, 5, 20, 64])]


COMPARISONS = [
    Comparison("addRelativeTimeToObservations", _our_annotation, _repeat(320, _annotation_case)),
    Comparison("optimizeObservationsForContext", optimize_for_context,
               _repeat(300, lambda rng: [_optimize_input(rng)])),
    Comparison("formatObservationsForContext", _our_context, _repeat(150, _context_case)),
    Comparison("splitObservationContextChunks", split_observation_chunks,
               _repeat(80, lambda rng: [_boundary_text(rng)[0]])),
    Comparison("getObservationsAsOf", lambda text, cut: observations_as_of(text, _js_datetime(cut)),
               _repeat(100, _as_of_case)),
    Comparison("createMessageBoundary", lambda at: format_boundary(_js_datetime(at)), _repeat(40, _boundary_case)),
    Comparison("parseObserverOutput", _our_observer_output,
               _repeat(250, lambda rng: [_observer_output(rng, _random_now(rng))])),
    Comparison("detectDegenerateRepetition", lambda text: {"degenerate": is_degenerate(text)},
               _repeat(60, lambda rng: [_degenerate_input(rng)])),
    Comparison("sanitizeObservationLines", lambda text: {"observations": sanitize_lines(js_trim(
        text.removeprefix("<observations>\n").removesuffix("\n</observations>")))}, _repeat(60, _sanitize_case)),
    Comparison("injectAnchorIds", inject_anchor_ids, _repeat(150, lambda rng: [_anchor_input(rng)])),
    Comparison("stripEphemeralAnchorIds", strip_anchor_ids,
               _repeat(150, lambda rng: [rng.choice([_anchor_input(rng), inject_anchor_ids(_anchor_input(rng))])])),
    Comparison("parseAnchorId", parse_anchor_id,
               _repeat(80, lambda rng: [js_trim(rng.choice(_anchor_input(rng).split("\n")))])),
    Comparison("truncateObservationsToTokenBudget", lambda text, budget: truncate_to_token_budget(
        text, budget, quarter_tokens), _repeat(120, _truncation_case)),
    Comparison("prepareObserverContext", lambda text, budget: list(prepare_previous_observations(
        text, budget, quarter_tokens)), _repeat(60, _prepare_case)),
    Comparison("formatMessagesForObserver", _our_messages, _repeat(80, _messages_case)),
]

# Which reference function each comparison calls in Node (several look at one function from different sides).
_CALLS = {"detectDegenerateRepetition": "parseObserverOutput", "sanitizeObservationLines": "parseObserverOutput"}
# Fields of a parseObserverOutput answer that the partial comparisons look at.
_FIELDS = {"detectDegenerateRepetition": ("degenerate",), "sanitizeObservationLines": ("observations",)}

_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _normalise_reference(name: str, answer: Any) -> Any:
    """Apply om-eval's one documented departure: a line cut never leaves half a surrogate pair behind."""
    if name in _FIELDS:
        answer = {field: answer[field] for field in _FIELDS[name]}
    if isinstance(answer, dict) and isinstance(answer.get("observations"), str):
        answer = {**answer, "observations": _LONE_SURROGATE.sub("", answer["observations"])}
    if isinstance(answer, str):
        answer = _LONE_SURROGATE.sub("", answer)
    if name == "prepareObserverContext" and answer[0] is None:
        answer = ["", answer[1]]  # JS undefined context for empty observations; ours is ""
    return answer


@dataclass(frozen=True)
class Batch:
    cases: dict[str, list[list[Any]]]
    answers: dict[str, list[dict[str, Any]]]
    seconds: float


def answer_all(oracle: NodeFolder, comparisons: Sequence[Comparison], seed: int,
               calls: Mapping[str, str] | None = None) -> Batch:
    """Every case of ``comparisons`` generated from ``seed`` and answered by the oracle in one Node run (``calls``
    names the function a comparison reads its answers from, when it is another one's)."""
    rng = random.Random(seed)
    cases = {comparison.reference: list(comparison.cases(rng)) for comparison in comparisons}
    flat = [((calls or {}).get(name, name), args) for name, batch in cases.items() for args in batch]
    started = time.monotonic()
    results = oracle.run(flat)
    seconds = time.monotonic() - started
    answers: dict[str, list[dict[str, Any]]] = {}
    position = 0
    for name, batch in cases.items():
        answers[name] = results[position : position + len(batch)]
        position += len(batch)
    return Batch(cases, answers, seconds)


def mismatches_of(batch: Batch, name: str, ours: Callable[..., Any],
                  normalise: Callable[[Any], Any] = lambda ok: ok) -> list[str]:
    """Each case of ``name`` where ``ours`` differs from the oracle's (normalised) answer, described."""
    mismatches = []
    for args, answer in zip(batch.cases[name], batch.answers[name], strict=True):
        assert "error" not in answer, f"{name}{_short(args)} raised in Node: {answer['error'][:800]}"
        expected, actual = normalise(answer["ok"]), ours(*args)
        if actual != expected:
            mismatches.append(f"args={_short(args)}\n  mastra={_short(expected)}\n  ours  ={_short(actual)}")
    return mismatches


@pytest.fixture(scope="session")
def reference(oracle: Oracle) -> Batch:
    """Every generated case, answered by Mastra in one Node run."""
    return answer_all(oracle, COMPARISONS, SEED, _CALLS)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 600 else text[:600] + "…"


def _params() -> list[Any]:
    params = []
    for comparison in COMPARISONS:
        known = comparison.known_difference
        marks = [pytest.mark.xfail(strict=True, reason=known)] if known else []
        params.append(pytest.param(comparison, id=comparison.reference, marks=marks))
    return params


@pytest.mark.parametrize("comparison", _params())
def test_matches_mastra_1_10(
    comparison: Comparison,
    reference: Batch,
    record_property: Callable[[str, object], None],
    mastra_case_counts: dict[str, tuple[int, int]],
) -> None:
    name = comparison.reference
    mismatches = mismatches_of(reference, name, comparison.ours, lambda ok: _normalise_reference(name, ok))
    compared = len(reference.cases[name])
    record_property("mastra_cases", compared)
    record_property("mastra_identical", compared - len(mismatches))
    mastra_case_counts[name] = (compared, compared - len(mismatches))
    assert not mismatches, f"{len(mismatches)} of {compared} differ from 1.10.0:\n" + "\n".join(mismatches[:5])


def test_enough_cases_compared(
    oracle: Oracle, reference: Batch, record_property: Callable[[str, object], None], mastra_case_counts: dict
) -> None:
    total = sum(len(batch) for batch in reference.cases.values())
    record_property("mastra_cases_total", total)
    record_property("mastra_install_seconds", round(oracle.install_seconds, 1))
    record_property("mastra_oracle_seconds", round(reference.seconds, 2))
    mastra_case_counts["_timings"] = (round(oracle.install_seconds, 1), round(reference.seconds, 2))
    assert total >= 1000


# --------------------------------------------------------------------------- documented departures


def test_departure_wall_clock_days_across_daylight_saving(oracle: Oracle) -> None:
    """om-eval counts days on the wall clock, which is Mastra run with TZ=UTC. On a server in a zone with daylight
    saving, Mastra's day between two local midnights across the spring switch lasts 23 hours, so its floored day
    counts come out one short; om-eval keeps the calendar answer."""
    text = "Date: Mar 8, 2025\n* 🔴 a\nDate: Mar 10, 2025\n* 🔴 b"  # the US switched on Mar 9, 2025
    now = [2025, 3, 10, 0, 30, 0, 0]
    case = ("addRelativeTimeToObservations", [text, now])
    (in_utc,) = oracle.run([case])
    (in_new_york,) = oracle.run([case], tz="America/New_York")
    ours = _our_annotation(text, now)
    assert ours == in_utc["ok"] == [
        "<observations>",
        "Date: Mar 8, 2025 (2 days ago)\n* 🔴 a\n\n[2 days later]\n\nDate: Mar 10, 2025 (today)\n* 🔴 b",
    ]
    assert in_new_york["ok"] == [
        "<observations>",
        "Date: Mar 8, 2025 (yesterday)\n* 🔴 a\nDate: Mar 10, 2025 (today)\n* 🔴 b",
    ]


def test_departure_line_cut_keeps_surrogate_pairs_whole(oracle: Oracle) -> None:
    """Where 1.10 cuts an over-long line between the halves of an emoji (leaving a lone surrogate that no UTF-8
    encoder accepts, so the memory could not be stored or sent), om-eval cuts one code unit earlier."""
    head = "".join(f"{number} " for number in range(3_000))[:9_999]  # not repetitive, so not degenerate
    text = f"<observations>\n{head}😀 and more\n</observations>"
    (answer,) = oracle.run([("parseObserverOutput", [text])])
    assert answer["ok"]["observations"] == head + "\ud83d … [truncated]"
    assert parse_observer_output(text).observations == head + " … [truncated]"
