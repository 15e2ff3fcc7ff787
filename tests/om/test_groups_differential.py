"""Differential test: om-eval's observation groups (``om_eval.om.groups``) against ``@mastra/memory`` 1.31.0.

Why: in retrieval mode every observation cycle wraps its output in ``<observation-group id range>``; the actor
reads the groups rendered as ``## Group`` sections, the Reflector reads them stripped, and a reflection is mapped
back onto its source ranges. The scanner behind all of this is hand-written (line-started openings, nested and
unclosed tags, inline mentions, JS ``\\s`` after the tag name, JS ``trim``, multiline ``^`` after ``\\r`` and
U+2028, ASCII ``\\d``, safe integers), so the port is checked case by case against the package.

How: seeded inputs go in one batch to a small Node script of ours that calls the package's public entry
``@mastra/memory/processors``: ``wrapInObservationGroup``, ``parseObservationGroups``, ``stripObservationGroups``,
``renderObservationGroupsForReflection``, ``combineObservationGroupRanges``, ``deriveObservationGroupProvenance`` and
``reconcileObservationGroupsFromReflection``. ``buildMessageRange`` is not exported, so the range of a message list
is read where the package uses it: an ``ObservationalMemory`` engine with ``retrieval: true`` and a stand-in
Observer (a fixed reply, no network) observes the list, and the range of the group it stores is taken. The group
texts mix well-formed groups with groups lacking an id or a range, attributes in other orders or quoted with single
quotes, a ``>`` inside an attribute, odd whitespace after the tag name (no-break space, BOM, U+001C, U+2028, none),
nested and unclosed openings at line starts and inline, orphan closing tags, ``<thread>`` wrappers, message
boundaries and runs of blank lines. Reflections have ``## Group`` sections with and without backticked ids (known,
unknown, empty, spaced), headings that are not headings (``##Group``, ``## Groups``, ``## group``), headings after
``\\r`` and U+2028, ``_range:`` lines, preambles and lines shared between source groups (duplicate ids too). Ranges
are numeric (leading zeros, reversed, beyond 2**53, Arabic-Indic digits), opaque, comma lists with duplicates and
empty segments, and not pairs at all.

The id a reflection gets when no section names a source group is random in the package: ``id="<16 hex>"`` is
masked on both sides (om-eval's ``new_id`` returns a fixed 16-hex placeholder, masked the same way). A plain-string
message content is given to the engine as Mastra stores one (a single text part plus ``content``).

Known differences (``KNOWN_DIFFERENCES``) are empty: every case must be identical.

Marker ``mastra`` (and ``integration``); skipped, saying why, without node/npm or when the install fails. The
counts are printed at the end of the run under "compared with @mastra/memory 1.31.0 (retrieval mode)".
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest

from om_eval.om.records import Message
from tests.npm_oracle import NodeFolder, node_folder
from tests.om.recall.test_differential import (
    VERSION,
    first_difference,
    mismatch_report,
    retrieval_case_counts,
    short,
)
from tests.om.test_mastra_engine_differential import ENGINE_PACKAGES_1_31

pytestmark = [pytest.mark.mastra, pytest.mark.integration]

SEED = 20260620
GROUP_TEXTS = 140  # each one parsed, stripped and rendered
CASES = {"wrap": 60, "combine": 90, "derive": 100, "reconcile": 90, "messageRange": 110}
MIN_CASES = 500

# --------------------------------------------------------------------------- the oracle

_NODE_SCRIPT = r"""
// Written by om-eval's tests/om/test_groups_differential.py: evaluates observation-group cases with
// @mastra/memory 1.31. Input: [[name, args], ...]. Output: per case {ok: value} or {error: message}.
import { InMemoryStore } from "@mastra/core/storage";
import * as om from "@mastra/memory/processors";

const RANDOM_ID = /id="[0-9a-f]{16}"/g;
const group = (g) => ({ id: g.id, range: g.range, content: g.content, kind: g.kind ?? null });
const source = (g) => (g.kind === null ? { id: g.id, range: g.range, content: g.content } : { ...g });

// buildMessageRange is internal: a retrieval engine with a fixed stand-in Observer observes the messages, and the
// range of the group it stores is read back.
function standIn(reply) {
  const generate = async () => ({
    content: [{ type: "text", text: reply }], finishReason: "stop",
    usage: { inputTokens: 10, outputTokens: 20, totalTokens: 30 }, warnings: [],
    rawCall: { rawPrompt: null, rawSettings: {} },
  });
  return {
    specificationVersion: "v2", provider: "om-eval", modelId: "stand-in", supportedUrls: {}, doGenerate: generate,
    doStream: async () => {
      const result = await generate();
      const parts = [
        { type: "stream-start", warnings: [] },
        { type: "response-metadata", id: "r", modelId: "stand-in", timestamp: new Date(0) },
        { type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: result.content[0].text },
        { type: "text-end", id: "t" }, { type: "finish", finishReason: "stop", usage: result.usage },
      ];
      return { stream: new ReadableStream({ start(c) { for (const p of parts) c.enqueue(p); c.close(); } }),
               rawCall: result.rawCall };
    },
  };
}
const store = await new InMemoryStore().getStore("memory");
const engine = new om.ObservationalMemory({
  storage: store, scope: "thread", retrieval: true, model: standIn("<observations>\n* (09:00) a fact\n</observations>"),
  observation: { messageTokens: 0, bufferTokens: false }, reflection: { observationTokens: 1e9 },
});
let serial = 0;

const handlers = {
  wrap: (observations, range, id, kind) =>
    om.wrapInObservationGroup(observations, range, id, undefined, kind ?? undefined),
  parse: (text) => om.parseObservationGroups(text).map(group),
  strip: (text) => om.stripObservationGroups(text),
  render: (text) => om.renderObservationGroupsForReflection(text),
  combine: (groups) => om.combineObservationGroupRanges(groups.map(source)),
  derive: (content, groups) => om.deriveObservationGroupProvenance(content, groups.map(source)).map(group),
  reconcile: (content, sourceText) => {
    const result = om.reconcileObservationGroupsFromReflection(content, sourceText);
    return result === null ? null : result.replace(RANDOM_ID, 'id="<random>"');
  },
  messageRange: async (messages) => {
    const threadId = `range-${serial++}`;
    const { record } = await engine.observe({
      threadId, resourceId: "r",
      messages: messages.map((m) => ({
        id: m.id, threadId, resourceId: "r", role: m.role, type: "v2", createdAt: new Date(m.createdAt),
        content: typeof m.content === "string"
          ? { format: 2, parts: [{ type: "text", text: m.content }], content: m.content }
          : { format: 2, parts: m.content },
      })),
    });
    const groups = om.parseObservationGroups(record.activeObservations ?? "");
    return groups.length ? groups[0].range : null;
  },
};

let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = [];
for (const [name, args] of JSON.parse(input)) {
  try {
    results.push({ ok: await handlers[name](...args) });
  } catch (error) {
    results.push({ error: String(error?.stack ?? error) });
  }
}
process.stdout.write(JSON.stringify(results));
"""


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> NodeFolder:
    return node_folder(tmp_path_factory, "mastra-engine-oracle-1.31", ENGINE_PACKAGES_1_31)


@pytest.fixture(scope="module")
def case_counts(request: pytest.FixtureRequest) -> dict[str, tuple[float, float]]:
    return retrieval_case_counts(request)


# --------------------------------------------------------------------------- generated group texts

HEX = "0123456789abcdef"
LINES = [
    "* 🔴 (10:00) User plans 4-day Lisbon trip in May", "* (10:02) Budget 1500 EUR", "Date: Mar 1, 2026",
    "* 🟡 (14:30) User asked about tram 28", "* User likes tea", "  * indented sub-point", "- dash item",
    "* (09:15) 日本語 note", "* duplicate line", "* duplicate line", "", "   ", "* trailing spaces   ", "\t* tab-led",
    "* mentions <observation-group id=\"in\" range=\"a:b\"> inline", "* an orphan </observation-group> close",
    "* nbsp end\u00a0", "\ufeff* bom-led", "* \x1c odd separator", "* 👍🏽 emoji 𝔘", "_range: `x:y`_",
    "## Group `not-a-tag`", "* [O3] anchored line", "* line with > and < signs", "* ends in a unit separator\x1f",
    "\x85* led by a next-line control", "\x1c",
]
BOUNDARY = "--- message boundary (2026-03-01T10:03:00.000Z) ---"
OPEN_SEPARATORS = [" "] * 10 + ["  ", "\t", "\n", "\u00a0", "\ufeff", "\x1c", "\u2028", "\u3000", ""]


def _hex16(rng: random.Random) -> str:
    return "".join(rng.choice(HEX) for _ in range(16))


def _group_id(rng: random.Random) -> str:
    return rng.choice([_hex16(rng)] * 5 + [f"g{rng.randint(1, 6)}"] * 3 + ["", "id with space", "ünï", "x-y_z",
                                                                          "a`b"])


def _message_ids(rng: random.Random) -> tuple[str, str]:
    shape = rng.random()
    if shape < 0.5:
        return f"m-{rng.randint(1, 40)}", f"m-{rng.randint(1, 40)}"
    if shape < 0.8:
        a, b = sorted(rng.sample(range(400), 2))
        return str(a), str(b)
    return _hex16(rng)[:8], _hex16(rng)[:8]


def _range(rng: random.Random) -> str:
    roll = rng.random()
    a, b = _message_ids(rng)
    if roll < 0.45:
        return f"{a}:{b}"
    if roll < 0.55:
        c, d = _message_ids(rng)
        return rng.choice([f"{a}:{b},{c}:{d}", f"{a}:{b}, {c}:{d}", f"{a}:{b},{a}:{b}", f"{a}:{b},,{c}:{d}"])
    return rng.choice([
        f"{b}:{a}", "007:9", "40:12", "0:0", f" {a} : {b} ", f"{a}:{b}:c", f":{b}", f"{a}:", "", ",", f"{a}:{b},x",
        "9007199254740993:1", "9007199254740991:2", "٣:٥", "1:2, 3:4", "\u00a01:2\u00a0", "１:２", "1e3:5", "-1:4",
        "+1:4", f"{a}", "1.5:2",
    ])


def _kind(rng: random.Random) -> str | None:
    return rng.choice([None] * 6 + ["reflection", "reflection", "", "x y"])


def _open_tag(rng: random.Random, group_id: str | None, range_: str | None, kind: str | None) -> str:
    attributes = []
    if group_id is not None:
        attributes.append(f'id="{group_id}"')
    if range_ is not None:
        attributes.append(f'range="{range_}"')
    if kind is not None:
        attributes.append(f'kind="{kind}"')
    if rng.random() < 0.12:
        attributes.append(rng.choice(['data-x="1"', "note='single'", "flag", 'x="a>b"', "id='single'",
                                      'range="dup:licate"', '-bad="1"', 'é="x"']))
    if rng.random() < 0.15:
        rng.shuffle(attributes)
    joiner = rng.choice([" "] * 8 + ["\n", "  ", "\t"])
    return "<observation-group" + rng.choice(OPEN_SEPARATORS) + joiner.join(attributes) + ">"


def _lines(rng: random.Random, low: int = 0, high: int = 4) -> str:
    return "\n".join(rng.choice(LINES) for _ in range(rng.randint(low, high)))


def _block(rng: random.Random) -> str:
    roll = rng.random()
    group_id = None if roll < 0.06 else _group_id(rng)
    range_ = None if 0.06 <= roll < 0.12 else _range(rng)
    pad = rng.choice(["\n"] * 6 + ["\n\n", "", " ", "\n  \n", "\t\n", "\u00a0\n", "\r\n"])
    close = rng.choice(["\n</observation-group>"] * 8 + ["</observation-group>", "", "\n</observation-group >",
                                                           "\n</observation-group>\n</observation-group>"])
    return _open_tag(rng, group_id, range_, _kind(rng)) + pad + _lines(rng) + rng.choice(["", "\n", " "]) + close


def _filler(rng: random.Random) -> str:
    return rng.choice([BOUNDARY, "Date: Mar 5, 2026", "* plain line outside any group", '<thread id="t1">',
                       "</thread>", "", "</observation-group>", "text <observation-group id=\"i\" range=\"1:2\">x",
                       "<observation-group", "<observation-groups id=\"a\" range=\"b:c\">"])


def _nested(rng: random.Random) -> str:
    """An opening, then another before the first one closes: at a line start (the first is cut) or inline."""
    outer = _open_tag(rng, _group_id(rng), _range(rng), None)
    inner = _open_tag(rng, _group_id(rng), _range(rng), None)
    where = rng.choice(["\n", "\n", " inline ", ""])
    return f"{outer}\n{_lines(rng, 1, 2)}{where}{inner}\n{_lines(rng, 1, 2)}\n</observation-group>"


def group_text(rng: random.Random) -> str:
    pieces = []
    for _ in range(rng.randint(1, 6)):
        roll = rng.random()
        pieces.append(_block(rng) if roll < 0.6 else _nested(rng) if roll < 0.72 else _filler(rng))
    separators = ["\n", "\n\n", "\n\n", "\n\n\n\n", "", " ", "\r\n", f"\n\n{BOUNDARY}\n\n"]
    text = pieces[0]
    for piece in pieces[1:]:
        text += rng.choice(separators) + piece
    if rng.random() < 0.1:
        text = rng.choice([" ", "\n", "\n\n\n", "\ufeff", "\x1c"]) + text + rng.choice([" ", "\n\n\n\n", "\u00a0",
                                                                                      "\x85", "\x1f\n"])
    return text


# --------------------------------------------------------------------------- generated reflections

SOURCE_LINES = ["* (10:00) User plans a trip", "* (10:02) Budget 1500 EUR", "* User likes tea", "* Works at ACME",
                "* Has a beagle named Toby 🐶", "* Prefers trains", "* (11:00) Asked about tram 28",
                "* duplicate fact", "Date: Mar 1, 2026", "* 日本語 fact"]


def _source_groups(rng: random.Random) -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = []
    for _ in range(rng.randint(0 if rng.random() < 0.05 else 1, 5)):
        group_id = rng.choice([g["id"] for g in groups]) if groups and rng.random() < 0.1 else rng.choice(
            [_hex16(rng), f"g{rng.randint(1, 9)}"])
        content = "\n".join(rng.sample(SOURCE_LINES, rng.randint(0 if rng.random() < 0.05 else 1, 4)))
        groups.append({"id": group_id, "range": _range(rng), "content": content, "kind": _kind(rng)})
    return groups


def _heading(rng: random.Random, groups: list[dict[str, Any]]) -> str:
    known = rng.choice(groups)["id"] if groups else "g1"
    chosen = known if rng.random() < 0.65 else rng.choice(["unknown-id", _hex16(rng), "g9"])
    line_start = rng.choice(["\n"] * 12 + ["\r", "\u2028", "\r\n", "\u2029"])
    return line_start + rng.choice([
        f"## Group `{chosen}`", f"## Group `{chosen}`", f"## Group `{chosen}`", f"##  Group\t`{chosen}`",
        f"## Group {chosen}", "## Group ``", f"## Group ` {chosen} `", f"## Group `{chosen}` and `other`",
        f"## Group\n`{chosen}`", f"## Groups `{chosen}`", f"##Group `{chosen}`", f"## group `{chosen}`",
        f"## Group `{chosen}` ", f"## Group \u00a0`{chosen}`", "## Group `\u00a0`",
    ])


def _body(rng: random.Random, groups: list[dict[str, Any]]) -> str:
    pool = [line for g in groups for line in g["content"].split("\n")] or SOURCE_LINES
    lines = []
    for _ in range(rng.randint(0, 4)):
        line = rng.choice(pool) if rng.random() < 0.7 else rng.choice(["* a brand new line", "* merged insight",
                                                                       "  "])
        lines.append(rng.choice(["", "  ", "\t", "\u00a0"]) + line + rng.choice(["", " ", "\u00a0", "\ufeff"]))
    if rng.random() < 0.45:
        range_line = rng.choice([f"_range: `{_range(rng)}`_", f"_range:`{_range(rng)}`_  ", "_range: `a:b`",
                                 f"_range:  `{_range(rng)}`_\t"])
        lines.insert(0 if rng.random() < 0.7 else len(lines), range_line)
    return "\n".join(lines)


def reflection(rng: random.Random, groups: list[dict[str, Any]]) -> str:
    roll = rng.random()
    if roll < 0.2:
        return "\n".join(rng.choice(SOURCE_LINES + ["* new summary line"]) for _ in range(rng.randint(1, 4)))
    if roll < 0.25:
        return rng.choice(["", "   ", "\n\n", "\u00a0"])
    text = _body(rng, groups) if rng.random() < 0.2 else ""  # a preamble before the first heading
    for _ in range(rng.randint(1, 4)):
        text += _heading(rng, groups) + "\n" + _body(rng, groups) + rng.choice(["\n", "\n\n", ""])
    return text if rng.random() < 0.8 else rng.choice([" \n", "\n\n", "\u00a0"]) + text


# --------------------------------------------------------------------------- generated message lists

RANGE_CONTENTS: list[Any] = [
    "plain text", "", " ", [], [{"type": "step-start"}], [{"type": "data-foo", "data": {}}],
    [{"type": "step-start"}, {"type": "data-progress", "data": {"n": 1}}], [{"type": "text", "text": ""}],
    [{"type": "text", "text": "hello"}], [{"type": "step-start"}, {"type": "text", "text": "after a step"}],
    [{"type": "data-foo", "data": {}}, {"type": "reasoning", "reasoning": "thinking", "details": []}],
    [{"type": "tool-invocation", "toolInvocation": {"state": "result", "toolCallId": "c1", "toolName": "calc",
                                                    "args": {"x": 1}, "result": 2}}],
    [{"type": "step-start"}, {"type": "step-start"}], [{"type": "data-a", "data": {}}, {"type": "data-b", "data": {}}],
]


def _range_messages(rng: random.Random) -> list[dict[str, Any]]:
    moment = datetime(2026, 3, 1, 9, 0) + timedelta(minutes=rng.randint(0, 10_000))
    messages = []
    for index in range(rng.randint(1, 6)):
        moment += timedelta(seconds=rng.randint(1, 600), milliseconds=rng.randint(0, 999))
        message_id = rng.choice([f"m{index}", f"m{index}", _hex16(rng)[:10], f"a:{index}", f"{index}:", f"x y{index}"])
        messages.append({"id": message_id, "role": rng.choice(["user", "assistant"]),
                         "createdAt": f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z",
                         "content": rng.choice(RANGE_CONTENTS)})
    return messages


# --------------------------------------------------------------------------- om-eval's side


def _group(data: dict[str, Any]) -> Any:
    from om_eval.om.groups import ObservationGroup

    return ObservationGroup(data["id"], data["range"], data["content"], data["kind"])


def _as_dict(group: Any) -> dict[str, Any]:
    return {"id": group.id, "range": group.range, "content": group.content, "kind": group.kind}


RANDOM_ID = re.compile(r'id="[0-9a-f]{16}"')
PLACEHOLDER_ID = "feedfacecafebeef"


def _message(data: dict[str, Any]) -> Message:
    content = data["content"]
    moment = datetime.strptime(data["createdAt"], "%Y-%m-%dT%H:%M:%S.%fZ")
    return Message(data["id"], "t", data["role"], content if isinstance(content, str) else tuple(
        dict(part) for part in content), moment)


def _ours(name: str) -> Callable[..., Any]:
    from om_eval.om import groups as g

    def reconcile(content: str, source: str) -> str | None:
        result = g.reconcile_after_reflection(content, source, lambda: PLACEHOLDER_ID)
        return None if result is None else RANDOM_ID.sub('id="<random>"', result)

    return {
        "wrap": lambda observations, range_, group_id, kind: g.wrap_in_group(observations, range_, group_id, kind),
        "parse": lambda text: [_as_dict(group) for group in g.parse_groups(text)],
        "strip": g.strip_groups,
        "render": g.render_groups,
        "combine": lambda groups: g.combine_ranges([_group(group) for group in groups]),
        "derive": lambda content, groups: [_as_dict(group) for group in g.derive_provenance(
            content, [_group(group) for group in groups])],
        "reconcile": reconcile,
        "messageRange": lambda messages: g.message_range([_message(m) for m in messages]),
    }[name]


# --------------------------------------------------------------------------- generating and comparing


#: Hand-made texts at the scanner's corners, checked before the generated ones.
EXTRA_GROUP_TEXTS = [
    '<observation-group id="a" range="1:2"',
    '<observation-group id="a" range="1:2">\nx\n</observation-group>\n<observation-group id="b" range="3:4"',
    '* inline <observation-group id="a" range="1:2">\nx',
    '<observation-group id="a" range="1:2">\nx\n<observation-group id="b" range="3:4">\ny',
    '</observation-group>\n<observation-group id="a" range="1:2">\nx\n</observation-group>',
    '<observation-group id="" range="1:2">\nx\n</observation-group>',
    ('<observation-group id="a" range="1:2">\nx\n</observation-group>\n\n<observation-group id="b">\ny\n'
     "</observation-group>"),
    '<observation-group  id="a"  range="b:c"  kind="reflection" >\n\n\n\nx\n\n\n\n</observation-group>',
    "a\n\n\n\n\nb", "", "   ", "\n\n\n",
    '<observation-group id="a" range="1:2">\n</observation-group>',
    '<observation-group id="a" range="1:2"></observation-group>',
    ('<observation-group id="a" range="1:2">x</observation-group><observation-group id="b" range="3:4">y'
     "</observation-group>"),
    ('<observation-group id="a" range="1:2">\n<observation-group id="b" range="3:4">\ny\n</observation-group>\n'
     "</observation-group>"),
]


def generate(seed: int = SEED) -> list[tuple[str, list[Any]]]:
    rng = random.Random(seed)
    cases: list[tuple[str, list[Any]]] = []
    for text in EXTRA_GROUP_TEXTS:
        cases += [("parse", [text]), ("strip", [text]), ("render", [text])]
    for _ in range(GROUP_TEXTS):
        text = group_text(rng)
        cases += [("parse", [text]), ("strip", [text]), ("render", [text])]
    for _ in range(CASES["wrap"]):
        observations = rng.choice(["", "   ", "\n\n* one\n\n", "\u00a0* nbsp\ufeff", _lines(rng, 1, 5),
                                   "\t* tab\n* two  \n"])
        cases.append(("wrap", [observations, _range(rng), _group_id(rng), _kind(rng)]))
    for _ in range(CASES["combine"]):
        groups = [{"id": f"g{i}", "range": _range(rng), "content": "", "kind": None}
                  for i in range(rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 5]))]
        cases.append(("combine", [groups]))
    for _ in range(CASES["derive"]):
        groups = _source_groups(rng)
        cases.append(("derive", [reflection(rng, groups), groups]))
    for _ in range(CASES["reconcile"]):
        roll = rng.random()
        if roll < 0.6:
            groups = _source_groups(rng)
            source = "\n\n".join(
                _open_tag(rng, g["id"], g["range"], g["kind"]) + "\n" + g["content"] + "\n</observation-group>"
                for g in groups) or "* no groups here"
        else:
            groups = []
            source = group_text(rng)
        cases.append(("reconcile", [reflection(rng, groups), source]))
    for _ in range(CASES["messageRange"]):
        cases.append(("messageRange", [_range_messages(rng)]))
    return cases


#: Differences kept on purpose: (comparison, predicate on the arguments, reason). Empty: none is intended.
KNOWN_DIFFERENCES: list[tuple[str, Callable[[list[Any]], bool], str]] = []


@dataclass(frozen=True)
class Mismatch:
    kind: str
    text: str


@dataclass(frozen=True)
class Batch:
    cases: list[tuple[str, list[Any]]]
    answers: list[dict[str, Any]]
    seconds: float


@pytest.fixture(scope="module")
def reference(oracle: NodeFolder) -> Batch:
    cases = generate()
    started = time.monotonic()
    answers = oracle.run(_NODE_SCRIPT, cases, name="om_eval_groups_oracle_1_31.mjs")
    return Batch(cases, answers, time.monotonic() - started)


def compare(batch: Batch, name: str) -> tuple[int, list[Mismatch], list[str]]:
    ours = _ours(name)
    compared, mismatches, pinned = 0, [], []
    for (kind, args), answer in zip(batch.cases, batch.answers, strict=True):
        if kind != name:
            continue
        compared += 1
        assert "error" not in answer, f"{name}{short(args, 600)} raised in Node: {answer['error'][:800]}"
        expected = answer["ok"]
        try:
            actual = ours(*args)
        except Exception as error:
            actual = f"<raised {type(error).__name__}: {error}>"
        if actual == expected:
            continue
        reason = next((r for k, applies, r in KNOWN_DIFFERENCES if k == name and applies(args)), None)
        if reason is not None:
            pinned.append(reason)
            continue
        text = (f"[{name}] args={short(repr(args), 500)}\n    mastra={short(repr(expected), 500)}"
                f"\n    ours  ={short(repr(actual), 500)}")
        if isinstance(expected, str) and isinstance(actual, str):
            text += "\n    " + first_difference(expected, actual, 60)
        mismatches.append(Mismatch(name, text))
    return compared, mismatches, pinned


NAMES = {"wrap": "wrapInObservationGroup", "parse": "parseObservationGroups", "strip": "stripObservationGroups",
         "render": "renderObservationGroupsForReflection", "combine": "combineObservationGroupRanges",
         "derive": "deriveObservationGroupProvenance", "reconcile": "reconcileObservationGroupsFromReflection",
         "messageRange": "buildMessageRange (through an observation)"}


@pytest.mark.parametrize("name", list(NAMES))
def test_groups_match_mastra_1_31(
    name: str, reference: Batch, oracle: NodeFolder, record_property: Callable[[str, object], None],
    case_counts: dict[str, tuple[float, float]],
) -> None:
    compared, mismatches, pinned = compare(reference, name)
    identical = compared - len(mismatches) - len(pinned)
    record_property("mastra_cases", compared)
    record_property("mastra_identical", identical)
    case_counts[f"{NAMES[name]} -> {name}"] = (compared, identical)
    case_counts["_timings groups"] = (round(oracle.install_seconds, 1), round(reference.seconds, 2))
    if pinned:
        print(f"\npinned differences: {dict(Counter(pinned))}")
    if mismatches:
        pytest.fail(mismatch_report([(m, m.text) for m in mismatches], compared, per_kind=6, most=6), pytrace=False)


def test_enough_group_cases(reference: Batch) -> None:
    counts = Counter(kind for kind, _ in reference.cases)
    assert len(reference.cases) >= MIN_CASES, counts
    assert min(counts.values()) >= 50, counts


def test_group_cases_reach_every_rule(reference: Batch) -> None:
    """The generated inputs reach each rule often enough, judged on the package's own answers."""
    found: Counter[str] = Counter()
    for (kind, args), answer in zip(reference.cases, reference.answers, strict=True):
        value = answer.get("ok")
        if kind == "parse":
            found["parse: no group"] += not value
            found["parse: 2+ groups"] += len(value or []) >= 2
            found["parse: a kind"] += any(g["kind"] is not None for g in value or [])
            found["parse: fewer groups than openings"] += len(value or []) < args[0].count("<observation-group")
        elif kind == "render":
            found["render: null"] += value is None
            found["render: sections"] += value is not None and "## Group `" in value
        elif kind == "combine":
            found["combine: numeric span"] += bool(value) and all(
                p.isdigit() for p in value.split(":")) and value.count(":") == 1
            found["combine: comma list kept"] += "," in (value or "")
            found["combine: empty"] += value == ""
        elif kind == "derive":
            found["derive: none"] += not value
            found["derive: derived-group id"] += any(g["id"].startswith("derived-group-") for g in value or [])
            found["derive: 2+ sections"] += len(value or []) >= 2
        elif kind == "reconcile":
            found["reconcile: null"] += value is None
            found["reconcile: empty"] += value == ""
            found["reconcile: random id"] += 'id="<random>"' in (value or "")
            found["reconcile: named sections"] += bool(value) and 'id="<random>"' not in value
        elif kind == "messageRange":
            found["messageRange: observed"] += value is not None
            found["messageRange: first != args[0]"] += value is not None and not value.startswith(args[0][0]["id"])
    print("\ngroup coverage:\n  " + "\n  ".join(f"{k}: {v}" for k, v in sorted(found.items())))
    must = {"parse: no group": 10, "parse: 2+ groups": 20, "parse: a kind": 10,
            "parse: fewer groups than openings": 30, "render: null": 10, "render: sections": 50,
            "combine: numeric span": 5, "combine: comma list kept": 5, "combine: empty": 5, "derive: none": 10,
            "derive: derived-group id": 5, "derive: 2+ sections": 10, "reconcile: null": 5, "reconcile: empty": 2,
            "reconcile: random id": 10, "reconcile: named sections": 10, "messageRange: observed": 100,
            "messageRange: first != args[0]": 10}
    thin = {name: found[name] for name, least in must.items() if found[name] < least}
    assert not thin, f"the generator no longer reaches these rules often enough: {thin}"
    assert VERSION == "1.31.0"
