"""Differential test: om-eval's ``recall`` tool (``om_eval.om.recall``) against the tool of ``@mastra/memory`` 1.31.0.

Why: in retrieval mode the actor reads raw history through ``recall``, and what it reads is the JSON text of the
object the tool returns (or the message of the error it throws): paging from a thread's start or end or around a
cursor, range hints, cross-thread messages, low-detail truncation with its hints, the 2,000-token page budget and
its auto-expansion, single parts in ``charOffset`` chunks, thread listings with date filters, schema errors. Each of
those is a small rule with JavaScript arithmetic under it, so the port is checked case by case against the package.

How: seeded histories (one resource with 2-5 threads, some untitled, 0-25 messages each, plus a thread of a second
resource; plain-string or Mastra v2 part contents: text of a few words up to ~3,000 tokens with emoji, CJK and
accented words, ``step-start``, ``tool-invocation`` in the states ``partial-call``/``call``/``result`` with object
or string results, ``reasoning``, ``image``/``file`` with and without a file name, ``data-*`` parts, empty text,
v5-style ``tool-call``/``tool-result``, unknown part types, system reminders; tool arguments and results with
JS-sensitive numbers (``1.0``, ``1e21``, ``1.5e-7``, ``-0``) and integer-like keys, which V8 writes first; times
with milliseconds, some shared by neighbours; a few ids containing ``:``) are saved into one ``InMemoryStore`` per
history, and many generated inputs per history (every mode but ``search``, which 1.31 offers only with a vector
store and is checked apart, below; explicit, ``current``, foreign and missing thread ids; cursors of this or another
thread or resource, range-looking, unknown, padded or blank; pages -50..50; limits 1..20; both anchors and details;
``partIndex`` inside, past the end or on a skipped part; ``charOffset`` at 0, mid-text, inside a surrogate pair, past
the end; filters; ``before``/``after`` near the threads' creation times in forms V8 reads (ISO with and without zone
or time, ``March 5, 2026``, ``2026/03/05``, ``03/05/2026``, ``5 March 2026``, RFC 1123, a lower-case ``z``) or rejects;
nulls, which the schema lets through; schema violations) run through
``new Memory({...}).listTools().recall.execute(input, {memory, agent})`` in one Node run, with ``retrieval: true``
(scope ``resource``) or ``retrieval: {scope: 'thread'}``, the agent's thread being one of the resource's, absent,
unsaved or another resource's. Node sends back ``JSON.stringify`` of the returned object (so no re-serialisation stands
between the two texts) or the thrown message; om-eval must give the same text from ``result_json(recall(...))`` or
the same ``str(RecallError)``. Nothing of the package is copied here; our Node script only calls its public API.

Mapping between the two sides:

* messages are saved straight into the store (``getMemoryStore().saveMessages``) in the order of the Python list,
  so ties in time keep that order on both sides; ``Memory.saveMessages`` would also strip working-memory tags and
  drop part-less messages, which are not the tool's rules. The store stamps each touched thread with the wall
  clock, so the threads are saved again afterwards with their generated ``updatedAt``;
* a plain-string content is stored as that string, which the store reads back as one text part (and
  ``content.content``): the same as Mastra's agent path gives for a string;
* datetimes are naive UTC wall-clock times on the Python side, ISO strings with ``Z`` on the Node side.

Search mode (``mode="search"``), which 1.31 offers only with ``retrieval: {vector: true}`` and a vector store and an
embedder on the Memory: the same histories are answered by a second pair of tools (``{vector: true}`` and
``{vector: true, scope: 'thread'}``) built on a Memory subclass with dummy truthy ``vector``/``embedder`` (all the
tool checks) whose ``searchMessages`` returns the case's fixed hits whatever it is asked, and records what it was
asked. om-eval's ``recall`` gets a searcher (``FixedHits``) returning the same hits unchanged; the tool on each side
then filters (thread, before/after on ``observedAt``), cuts to ``topK`` and lays the hits out. Per case 0-25 hits:
thread ids of the resource, of another resource, unknown or empty; scores with ``toFixed(2)`` traps (exact halves
like 0.125 and 0.375, 1.005, -0, 1e21); group ids present, empty or absent; ranges ``a:b``, ``a``, ``a:b:c``,
``:``, empty or absent; texts absent, empty, blank (JS whitespace), multi-line observation lines or up to ~3,000
tokens (past the 2,000-token budget of the assembled result); ``observedAt`` absent or on, a millisecond either
side of, or further from the before/after bounds (naive or aware UTC datetimes on our side, case by case). Inputs:
a query (or none, null, blank), ``limit`` 1..20 or absent, ``threadId`` explicit/``current``/foreign/absent, before
and after in the date forms above (also in thread scope, where the tool reads them though its schema omits them),
ignored options of the other modes, current thread equal to the hits' or not; plus schema violations and plain
calls of the other modes through the search-enabled tool (its mode enum and property order differ). Besides the
returned text, what the tool asked ``searchMessages`` for (``topK``, ``threadId``, ``observedAfter``,
``observedBefore`` as ISO strings, ``Invalid Date`` for an unreadable date) must equal what om-eval asked its
searcher for.

Known differences (``KNOWN_DIFFERENCES``): one, pinned with its reason and reported apart instead of failing. A
search with a ``before`` or ``after`` that JS cannot read throws "Invalid time value" in 1.31's vector search
(``Memory.searchMessages`` formats the Invalid Date it is handed); om-eval raises the same error, but the stub that
stands in for the vector store here cannot throw, so the two answers differ. Every other case must be identical.

Marker ``mastra`` (and ``integration``); skipped, saying why, without node/npm or when the install fails. The
counts are printed at the end of the run under "compared with @mastra/memory 1.31.0 (retrieval mode)".
"""

from __future__ import annotations

import copy
import json
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from om_eval.om.records import Message
from tests.npm_oracle import NodeFolder, node_folder
from tests.om.test_mastra_engine_differential import ENGINE_PACKAGES_1_31

pytestmark = [pytest.mark.mastra, pytest.mark.integration]

SEED = 20260619
VERSION = ENGINE_PACKAGES_1_31["@mastra/memory"]
HISTORIES = 34
INPUTS_PER_HISTORY = 21
MIN_CASES = 600

# --------------------------------------------------------------------------- the oracle

_NODE_SCRIPT = r"""
// Written by om-eval's tests/om/recall/test_differential.py: runs the recall tool of @mastra/memory 1.31 over
// generated histories. Input: {histories: [{threads, messages}], cases: [{history, scope, threadId, resourceId,
// input, hits?}]}. Output: per case {result: JSON.stringify(returned object)} or {thrown: error message}, and for a
// case with hits (search enabled) also {asked: [what the tool asked searchMessages for]}.
import { Memory } from "@mastra/memory";
import { InMemoryStore } from "@mastra/core/storage";

// Search enabled (retrieval.vector with a truthy vector store and embedder, which the tool only checks for): the
// tool's only call into them is Memory.searchMessages, answered here with the case's fixed hits whatever is asked.
let fixedHits = [];
let asked = [];
const when = (d) => (d instanceof Date ? (Number.isNaN(d.getTime()) ? "Invalid Date" : d.toISOString()) : d);
class FixedHitsMemory extends Memory {
  async searchMessages({ query, topK, filter }) {
    const seen = {};
    for (const [key, value] of Object.entries(filter ?? {})) seen[key] = when(value);
    asked.push({ query, topK, filter: seen });
    return {
      results: fixedHits.map((h) => {
        const hit = { ...h };
        if ("observedAt" in hit) hit.observedAt = new Date(hit.observedAt);
        return hit;
      }),
    };
  }
}

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { histories, cases } = JSON.parse(input);

const tools = [];
for (const history of histories) {
  const storage = new InMemoryStore();
  const memoryWith = (retrieval) =>
    new Memory({ storage, options: { observationalMemory: { model: "openai/gpt-4o-mini", retrieval } } });
  const searchingWith = (retrieval) =>
    new FixedHitsMemory({ storage, vector: { fake: true }, embedder: { fake: true },
                          options: { observationalMemory: { model: "openai/gpt-4o-mini", retrieval } } });
  const byScope = { resource: memoryWith(true), thread: memoryWith({ scope: "thread" }),
                    "search resource": searchingWith({ vector: true }),
                    "search thread": searchingWith({ vector: true, scope: "thread" }) };
  const memory = byScope.resource;
  const threads = history.threads.map((t) => ({
    id: t.id, resourceId: t.resourceId, ...(t.title === null ? {} : { title: t.title }),
    createdAt: new Date(t.createdAt), updatedAt: new Date(t.updatedAt), metadata: {},
  }));
  for (const thread of threads) await memory.saveThread({ thread: { ...thread } });
  const store = await memory.getMemoryStore();
  await store.saveMessages({
    messages: history.messages.map((m) => ({
      id: m.id, threadId: m.threadId, resourceId: m.resourceId, role: m.role, createdAt: new Date(m.createdAt),
      type: "v2", content: typeof m.content === "string" ? m.content : { format: 2, parts: m.content },
    })),
  });
  // saveMessages stamps each touched thread with the wall clock: save the threads again, with our dates.
  for (const thread of threads) await memory.saveThread({ thread: { ...thread } });
  const entry = {};
  for (const [scope, m] of Object.entries(byScope)) entry[scope] = { memory: m, tool: m.listTools().recall };
  tools.push(entry);
}

const answers = [];
for (const c of cases) {
  const searching = Array.isArray(c.hits);
  const { memory, tool } = tools[c.history][searching ? `search ${c.scope}` : c.scope];
  const agent = {};
  if (c.threadId !== null) agent.threadId = c.threadId;
  if (c.resourceId !== null) agent.resourceId = c.resourceId;
  fixedHits = searching ? c.hits : [];
  asked = [];
  let answer;
  try {
    answer = { result: JSON.stringify(await tool.execute(structuredClone(c.input), { memory, agent })) };
  } catch (error) {
    let inner = error;
    while (inner?.id && inner?.cause instanceof Error) inner = inner.cause; // a MastraError around the tool's own
    answer = { thrown: inner instanceof Error ? inner.message : String(inner) };
  }
  if (searching) answer.asked = asked;
  answers.push(answer);
}
process.stdout.write(JSON.stringify(answers));
"""


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> NodeFolder:
    return node_folder(tmp_path_factory, "mastra-engine-oracle-1.31", ENGINE_PACKAGES_1_31)


# --------------------------------------------------------------------------- the tally, printed at the end

_COUNTS = pytest.StashKey[dict[str, tuple[float, float]]]()
SUMMARY_TITLE = f"compared with @mastra/memory {VERSION} (retrieval mode)"


class _Summary:
    """Prints the counts once the run is over (registered once, by the first ``case_counts`` fixture)."""

    def __init__(self, counts: dict[str, tuple[float, float]]) -> None:
        self.counts = counts

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        counts = dict(self.counts)
        timings = {name: value for name, value in counts.items() if name.startswith("_timings")}
        for name in timings:
            counts.pop(name)
        if not counts:
            return
        terminalreporter.write_sep("-", SUMMARY_TITLE)
        for name, (cases, identical) in counts.items():
            terminalreporter.write_line(f"{name}: {int(cases)} cases, {int(identical)} identical")
        total = sum(int(cases) for cases, _ in counts.values())
        same = sum(int(identical) for _, identical in counts.values())
        terminalreporter.write_line(f"total: {total} cases, {same} identical")
        for name, (install, run) in timings.items():
            label = name.removeprefix("_timings").strip() or "oracle"
            terminalreporter.write_line(f"{label}: npm install or cache check {install} s, Node oracle run {run} s")


def retrieval_case_counts(request: pytest.FixtureRequest) -> dict[str, tuple[float, float]]:
    """Per comparison, (cases compared with 1.31.0, cases identical), shared by the retrieval-mode suites."""
    counts = request.config.stash.setdefault(_COUNTS, {})
    name = "om-eval-mastra-1.31-retrieval-summary"
    if not request.config.pluginmanager.has_plugin(name):
        request.config.pluginmanager.register(_Summary(counts), name)
    return counts


@pytest.fixture(scope="module")
def case_counts(request: pytest.FixtureRequest) -> dict[str, tuple[float, float]]:
    return retrieval_case_counts(request)


def short(value: Any, limit: int = 400) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def first_difference(expected: str, actual: str, context: int = 90) -> str:
    """Where two texts part, with some text either side (both lengths too)."""
    at = next((i for i, (a, b) in enumerate(zip(expected, actual, strict=False)) if a != b),
              min(len(expected), len(actual)))
    start = max(0, at - context)
    return (f"first difference at char {at} (lengths {len(expected)} / {len(actual)}):\n"
            f"      mastra …{expected[start:at + context]!r}\n"
            f"      ours   …{actual[start:at + context]!r}")


# --------------------------------------------------------------------------- generated histories

_PLAIN_TEXT = (
    "the a to of and in is it you that he was for on are with as I his they be at one have this from or had by "
    "word but what some we can out other were all there when up use your how said an each she which do their time "
    "if will way about many then them write would like so these her long make thing see him two has look more day "
    "could go come did number sound no most people my over know water than call first who may down side been now "
    "find any new work part take get place made live where after back little only round man year came show every "
    "good me give our under name very through just form sentence great think say help low line differ turn cause "
    "itinerary accommodation internationalization reservation confirmation unbelievable"
)
PLAIN_WORDS = _PLAIN_TEXT.split()
ODD_WORDS = [
    "München", "Ærø", "façade", "naïve", "Łódź", "Příliš", "Gdańsk", "東京", "日本語", "한국어", "カタカナ", "😀",
    "👍🏽", "🇫🇷", "❤️", "𝔘𝔫𝔦", "🧪x", "1,000", "3.14", "42", "2026-03-01", "http://example.com/a?b=c", "foo_bar",
    "e-mail", "C++", "(note)", "[x]", "<tag>", "`code`", "#hash", "...", "!!", "—", "«quoted»", "ßtraße", "über",
    "TP1351", "09:40", "$12.50", "a/b", "x\u00a0y", "tab\there", "\ufeffbom", "ctl\x01char", "crlf\r\nline",
]
TOOL_NAMES = ["weatherLookup", "searchDocs", "calc", "get_user", "web.search"]
RESOURCES = ["user-1", "res_9f2c", "alice@example.com", "resource with spaces", "r1"]
OTHER_RESOURCE = "someone-else"
PART_TYPES = ["text", "tool-call", "tool-result", "reasoning", "image", "file"]


def _iso(moment: datetime) -> str:
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"


def _naive(iso: str) -> datetime:
    return datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ")


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _words(rng: random.Random, count: int) -> str:
    out: list[str] = []
    for index in range(count):
        word = rng.choice(ODD_WORDS) if rng.random() < 0.12 else rng.choice(PLAIN_WORDS)
        if index:
            roll = rng.random()
            out.append("\n" if roll < 0.03 else "\n\n" if roll < 0.04 else ". " if roll < 0.1 else ", "
                       if roll < 0.14 else " ")
        out.append(word)
    return "".join(out)


def _text(rng: random.Random) -> str:
    """A few words (often) up to ~3,000 tokens (rarely), around the 100-token low-detail cut often."""
    roll = rng.random()
    if roll < 0.45:
        return _words(rng, rng.randint(1, 12))
    if roll < 0.68:
        return _words(rng, rng.randint(20, 95))
    if roll < 0.85:
        return _words(rng, rng.randint(95, 230))
    if roll < 0.93:
        return _words(rng, rng.randint(300, 900))
    return _words(rng, rng.randint(1800, 2600))


def _json_value(rng: random.Random, depth: int = 0) -> Any:
    """Tool arguments and results: nested objects, JS-sensitive numbers, integer-like keys, odd strings."""
    roll = rng.random()
    if depth >= 2 or roll < 0.35:
        return rng.choice([
            "Lisbon", "", "Mild, occasional showers", 22, -3, 0, 1.0, 2.5, 1e21, 1.5e-7, -0.0, 0.1 + 0.2, True, False,
            None, "ünïcødé 😀", "line\nbreak", "quote\"d", "ctl\x1f\x7f", "\u2028sep", _words(rng, rng.randint(1, 30)),
        ])
    if roll < 0.5:
        return [_json_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    keys = rng.sample(["city", "month", "avgHighC", "rainyDays", "note", "items", "q", "k", "10", "2", "b", "a",
                       "nested", "ok", "score"], rng.randint(1, 5))
    return {key: _json_value(rng, depth + 1) for key in keys}


def _tool_result(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.3:
        return _text(rng)
    if roll < 0.4:
        return {"encryptedContent": "x" * rng.choice([100, 256, 257, 600]), "id": "rs_1"}
    if roll < 0.43:
        return {"rows": [_words(rng, 40) for _ in range(rng.randint(60, 120))]}  # over 4,000 tokens as JSON
    return _json_value(rng)


def _tool_invocation(rng: random.Random) -> dict[str, Any]:
    state = rng.choice(["result"] * 6 + ["call"] * 3 + ["partial-call"])
    invocation: dict[str, Any] = {"state": state, "toolCallId": f"call-{rng.randint(1, 999)}",
                                  "toolName": rng.choice(TOOL_NAMES + [""] if rng.random() < 0.05 else TOOL_NAMES)}
    roll = rng.random()
    if roll < 0.85:
        invocation["args"] = _json_value(rng, 1) if rng.random() < 0.3 else {"city": "Lisbon", "month": "May"}
    elif roll < 0.93:
        invocation["args"] = None
    if state == "result" and rng.random() < 0.93:
        invocation["result"] = _tool_result(rng)
    part: dict[str, Any] = {"type": "tool-invocation", "toolInvocation": invocation}
    if state == "result" and rng.random() < 0.06:
        part["providerMetadata"] = {"mastra": {"modelOutput": rng.choice(["model view", {"short": True}])}}
    return part


def _part(rng: random.Random, role: str) -> dict[str, Any]:
    roll = rng.random()
    if roll < 0.44:
        return {"type": "text", "text": _text(rng)}
    if roll < 0.58:
        return _tool_invocation(rng) if role == "assistant" or rng.random() < 0.2 else {"type": "text",
                                                                                         "text": _text(rng)}
    if roll < 0.66:
        shape = rng.random()
        if shape < 0.7:
            return {"type": "reasoning", "reasoning": _text(rng), "details": []}
        if shape < 0.85:
            return {"type": "reasoning", "text": _text(rng)}
        return {"type": "reasoning", "reasoning": "", "text": "hidden"}
    if roll < 0.74:
        kind = rng.choice(["image", "file"])
        part: dict[str, Any] = {"type": kind, "mimeType": "image/png" if kind == "image" else "application/pdf"}
        part["image" if kind == "image" else "data"] = "https://example.com/asset"
        name = rng.choice([None, None, "plan.pdf", "cat 😀.png", ""])
        if name is not None:
            part["filename"] = name
        return part
    if roll < 0.81:
        return {"type": rng.choice(["data-om-observation-end", "data-progress", "data-foo"]), "data": {"n": 1}}
    if roll < 0.85:
        return {"type": "step-start"}
    if roll < 0.89:
        return {"type": "text", "text": ""}
    if roll < 0.92:
        return {"type": "tool-call", "toolCallId": "c5", "toolName": rng.choice(TOOL_NAMES),
                **({"input": _json_value(rng, 1)} if rng.random() < 0.5 else {"args": "raw string args"})}
    if roll < 0.95:
        return {"type": "tool-result", "toolCallId": "c5", "toolName": rng.choice(TOOL_NAMES),
                **({"output": _json_value(rng, 1)} if rng.random() < 0.5 else {"result": "done"})}
    if roll < 0.97:
        return {"type": rng.choice(["source-url", "dynamic-tool"]), "url": "https://example.com"}
    return {"type": "text", "text": "<system-reminder>internal note</system-reminder>"}


def _content(rng: random.Random, role: str) -> str | list[dict[str, Any]]:
    roll = rng.random()
    if roll < 0.3:
        return _text(rng)
    if roll < 0.33:
        return rng.choice(["", " ", "<system-reminder>check in</system-reminder>"])
    if roll < 0.37:
        return [{"type": "data-om-buffering-start", "data": {}}] if rng.random() < 0.6 else [
            {"type": "step-start"}, {"type": "data-foo", "data": {}}]
    if roll < 0.38:
        return []
    parts = [{"type": "step-start"}] if role == "assistant" and rng.random() < 0.5 else []
    parts += [_part(rng, role) for _ in range(rng.choice([1, 1, 1, 2, 2, 3, 4, 5]))]
    return parts


STEPS = [timedelta(0), timedelta(milliseconds=1), timedelta(milliseconds=370), timedelta(seconds=4),
         timedelta(seconds=61), timedelta(minutes=17), timedelta(hours=3), timedelta(days=2)]


def _message_id(rng: random.Random, thread_tag: str, index: int) -> str:
    roll = rng.random()
    if roll < 0.025:
        return f"{thread_tag}:{index}"  # looks like a range: cannot be used as a cursor
    if roll < 0.035:
        return f"{thread_tag}-m{index}:"  # a trailing colon is no range
    if roll < 0.045:
        return f":{thread_tag}-m{index}"  # nor a leading one (but it cannot be resolved either)
    if roll < 0.3:
        return "".join(rng.choice("0123456789abcdef") for _ in range(12))
    return f"{thread_tag}-m{index}"


def _history(rng: random.Random, index: int) -> dict[str, Any]:
    resource = rng.choice(RESOURCES)
    base = datetime(2025, 1, 1) + timedelta(days=rng.randint(0, 540), milliseconds=rng.randint(0, 86_400_000))
    threads: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    count = rng.randint(2, 5)
    for position in range(count + 1):
        mine = position < count
        tag = f"h{index}t{position}" if mine else f"h{index}x"
        thread_id = rng.choice([f"thread-{tag}", f"{tag}-{rng.randint(100, 999)}"]) if mine else f"other-{tag}"
        created = base + timedelta(hours=rng.randint(-200, 200), milliseconds=rng.randint(0, 999))
        moment = created + timedelta(milliseconds=rng.randint(0, 5_000))
        size = rng.choice([0, 1, 2, 3, 4, 6, 8, 11, 15, 20, 25]) if mine else rng.randint(1, 6)
        for k in range(size):
            moment += rng.choice(STEPS) if rng.random() < 0.88 else timedelta(0)
            role = ("user" if k % 2 == 0 else "assistant") if rng.random() < 0.8 else rng.choice(["user", "assistant"])
            messages.append({"id": _message_id(rng, tag, k), "threadId": thread_id,
                             "resourceId": resource if mine else OTHER_RESOURCE, "role": role,
                             "createdAt": _iso(moment), "content": _content(rng, role)})
        updated = moment + timedelta(minutes=rng.randint(0, 90), milliseconds=rng.randint(0, 999))
        if threads and rng.random() < 0.12:
            updated = _naive(threads[-1]["updatedAt"])  # a tie in the newest-first order
        title = rng.choice([None, None, "", "Lisbon trip planning", "Chickpea dinner ideas", "Tax ⚖️ questions",
                            f"Thread {position}"])
        threads.append({"id": thread_id, "resourceId": resource if mine else OTHER_RESOURCE, "title": title,
                        "createdAt": _iso(created), "updatedAt": _iso(updated)})
    seen: set[str] = set()
    messages = [m for m in messages if not (m["id"] in seen or seen.add(m["id"]))]  # ids are unique in a store
    if rng.random() < 0.3:
        rng.shuffle(messages)  # saved out of order: ties in time then follow this order
    return {"resource": resource, "threads": threads, "messages": messages}


# --------------------------------------------------------------------------- generated inputs


@dataclass(frozen=True)
class Case:
    kind: str
    history: int
    scope: str
    thread_id: str | None
    resource_id: str | None
    arguments: dict[str, Any]
    #: Search cases (the tool built with search enabled): the hits ``searchMessages`` answers with, whatever it is
    #: asked, in the Node form (``observedAt`` an ISO string, absent keys absent); ``None`` for the other cases.
    hits: tuple[dict[str, Any], ...] | None = None
    #: Whether om-eval's hits carry aware UTC datetimes (else naive UTC, as its messages do).
    aware: bool = False

    def node(self) -> dict[str, Any]:
        found = {"history": self.history, "scope": self.scope, "threadId": self.thread_id,
                 "resourceId": self.resource_id, "input": self.arguments}
        return found if self.hits is None else {**found, "hits": list(self.hits)}


SCHEMA_VIOLATIONS: list[dict[str, Any]] = [
    {"limit": 21}, {"limit": 0}, {"page": 1.5}, {"page": 51}, {"page": -51}, {"detail": "medium"},
    {"mode": "search", "query": "lisbon"}, {"mode": "bogus"}, {"partIndex": -1, "cursor": "m1"}, {"cursor": ""},
    {"threadId": ""}, {"toolName": ""}, {"anchor": "middle"}, {"charOffset": -5, "cursor": "m1", "partIndex": 0},
    {"partType": "step-start"}, {"limit": "5"}, {"page": True}, {"cursor": 5}, {"limit": 21, "page": 1.5},
    {"detail": "HIGH", "limit": 25, "mode": "thread"}, {"before": 20260101, "mode": "threads"}, {"limit": 2.0},
    {"partIndex": 1.5, "cursor": "x"}, {"threadId": 7}, {"page": "2"},
]
DATE_TEMPLATES = ["iso-ms", "iso-ms+1", "iso-ms-1", "date", "no-z", "offset", "natural", "slashes", "garbage", "",
                  "bad-month", "space", "us", "day-month", "rfc", "lower-z", "space-minutes", "am-pm", "month-year",
                  "dots"]
#: Forms that V8 reads as a date (every template but the invalid ones).
VALID_DATE_TEMPLATES = [t for t in DATE_TEMPLATES if t not in ("garbage", "", "bad-month")]


def _date_string(rng: random.Random, around: datetime, template: str | None = None) -> str:
    template = template or rng.choice(DATE_TEMPLATES)
    if template == "iso-ms":
        return _iso(around)
    if template in ("iso-ms+1", "iso-ms-1"):
        return _iso(around + timedelta(milliseconds=1 if template == "iso-ms+1" else -1))
    if template == "date":
        return f"{around:%Y-%m-%d}"
    if template == "no-z":
        return f"{around:%Y-%m-%dT%H:%M:%S}"
    if template == "offset":
        return f"{around:%Y-%m-%dT%H:%M:%S}+02:00"
    if template == "natural":
        return f"{around:%B} {around.day}, {around.year}"
    if template == "slashes":
        return f"{around:%Y/%m/%d}"
    if template == "garbage":
        return rng.choice(["yesterday", "not a date", "2026-13-45"])
    if template == "bad-month":
        return f"{around.year}-00-10"
    if template == "space":
        return f"{around:%Y-%m-%d %H:%M:%S}"
    if template == "us":
        return f"{around:%m/%d/%Y}"
    if template == "day-month":
        return f"{around.day} {around:%B %Y}"
    if template == "rfc":
        return f"{around:%a, %d %b %Y %H:%M:%S} GMT"
    if template == "lower-z":
        return f"{around:%Y-%m-%dT%H:%M:%S}z"
    if template == "space-minutes":
        return f"{around:%Y-%m-%d %H:%M}"
    if template == "am-pm":
        return f"{around:%b} {around.day}, {around.year}, {around:%I:%M %p}"
    if template == "month-year":
        return f"{around:%B %Y}"
    if template == "dots":
        return f"{around:%Y.%m.%d}"
    return ""


def _message_parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _part_text(part: dict[str, Any]) -> str:
    if part.get("type") == "text":
        return part.get("text", "")
    if part.get("type") == "reasoning":
        return part.get("reasoning") or part.get("text") or ""
    return ""


def _char_offset(rng: random.Random, text: str) -> int | None:
    length = _utf16_len(text)
    roll = rng.random()
    if roll < 0.4:
        return None
    if roll < 0.5:
        return 0
    if roll < 0.72 and length:
        return rng.randint(0, length)
    if roll < 0.85:
        pairs, units = [], 0
        for char in text:
            if ord(char) > 0xFFFF:
                pairs.append(units + 1)  # between the halves of the pair
            units += 1 if ord(char) <= 0xFFFF else 2
        if pairs:
            return rng.choice(pairs)
        return rng.choice([1, 7, 120])
    if roll < 0.93:
        return rng.choice([length, length + 1, 8_000, 9_500])
    return rng.choice([10**6, 3])


def _cursor(rng: random.Random, history: dict[str, Any], current: str | None) -> str:
    messages = history["messages"]
    here = [m["id"] for m in messages if m["threadId"] == current]
    mine = [m["id"] for m in messages if m["resourceId"] == history["resource"]]
    foreign = [m["id"] for m in messages if m["resourceId"] != history["resource"]]
    roll = rng.random()
    if roll < 0.5 and here:
        return rng.choice(here)
    if roll < 0.65 and mine:
        return rng.choice(mine)
    if roll < 0.7 and foreign:
        return rng.choice(foreign)
    if roll < 0.78 and mine:
        first, last = rng.choice(mine), rng.choice(mine)
        return rng.choice([f"{first}:{last}", f"{first}:{last},{last}:{first}", f" {first}:{last} ",
                           f"{first},{last}", f",{first}:x", f"{first}:"])
    if roll < 0.84:
        return rng.choice(["m-unknown", "does-not-exist", "0000"])
    if roll < 0.92 and mine:
        return rng.choice([f" {rng.choice(mine)} ", f"\t{rng.choice(mine)}\n", f"{rng.choice(mine)}\u00a0"])
    if roll < 0.95:
        return rng.choice(["   ", "\n", "\u3000"])
    return rng.choice([":x", "x:", "a:b"])


def _thread_argument(rng: random.Random, history: dict[str, Any], mine: list[str]) -> str:
    roll = rng.random()
    if roll < 0.6:
        return rng.choice(mine)
    if roll < 0.75:
        return "current"
    if roll < 0.88:
        return next(t["id"] for t in history["threads"] if t["resourceId"] != history["resource"])
    return rng.choice(["missing-thread", "CURRENT"])


def _page_options(rng: random.Random, arguments: dict[str, Any], pages: list[int]) -> None:
    if rng.random() < 0.55:
        arguments["page"] = rng.choice(pages)
    if rng.random() < 0.55:
        arguments["limit"] = rng.choice([1, 1, 2, 2, 3, 4, 5, 7, 10, 20, rng.randint(1, 20)])
    if rng.random() < 0.5:
        arguments["detail"] = rng.choice(["low", "high", "high"])
    if rng.random() < 0.12:
        arguments["partType"] = rng.choice(PART_TYPES)
    if rng.random() < 0.08:
        arguments["toolName"] = rng.choice(TOOL_NAMES + ["nope"])


def _arguments(rng: random.Random, kind: str, history: dict[str, Any], current: str | None) -> dict[str, Any]:
    mine = [t["id"] for t in history["threads"] if t["resourceId"] == history["resource"]]
    arguments: dict[str, Any] = {}
    if kind in ("threads", "threads dated"):
        arguments["mode"] = "threads"
        if rng.random() < 0.15:
            arguments["threadId"] = rng.choice(["current", rng.choice(mine)])
        if rng.random() < 0.5:
            arguments["page"] = rng.choice([0, 0, 1, 2, 3, -1, -2, 50])
        if rng.random() < 0.5:
            arguments["limit"] = rng.choice([1, 1, 2, 2, 3, 20, rng.randint(1, 20)])
        if kind == "threads dated":
            created = [_naive(t["createdAt"]) for t in history["threads"]]
            for key in rng.choice([["before"], ["after"], ["before", "after"]]):
                arguments[key] = _date_string(rng, rng.choice(created))
        return arguments
    if kind == "from start":
        if rng.random() < 0.2:
            arguments["mode"] = "messages"
        if rng.random() < 0.5:
            arguments["threadId"] = _thread_argument(rng, history, mine)
        if rng.random() < 0.45:
            arguments["anchor"] = rng.choice(["start", "end", "end"])
        _page_options(rng, arguments, [-3, -1, 0, 1, 1, 2, 2, 3, 5, 50])
        return arguments
    if kind == "cursor":
        here = [m["id"] for m in history["messages"] if m["threadId"] == current]
        if len(here) >= 3 and rng.random() < 0.35:  # reading on from a message of the current thread
            arguments["cursor"] = rng.choice(here)
            arguments["page"] = rng.choice([1, 1, -1, -1, 2, -2])
            arguments["limit"] = rng.choice([1, 2, 3, 5, 20])
            arguments["detail"] = rng.choice(["high", "high", "low"])
            return arguments
        arguments["cursor"] = _cursor(rng, history, current)
        if rng.random() < 0.2:
            arguments["threadId"] = _thread_argument(rng, history, mine)
        if rng.random() < 0.1:
            arguments["anchor"] = "end"  # ignored with a cursor
        _page_options(rng, arguments, [-50, -3, -2, -1, -1, 0, 1, 1, 2, 3, 50])
        return arguments
    if kind == "part":
        messages = history["messages"]
        here = [m for m in messages if m["threadId"] == current] or messages
        long_parts = [(m, i) for m in messages for i, p in enumerate(_message_parts(m))
                      if _utf16_len(_part_text(p)) > 9_000 and (m["threadId"] == current or rng.random() < 0.3)]
        roll = rng.random()
        if long_parts and roll < 0.4:  # a part over 2,000 tokens: read in chunks
            message, index = rng.choice(long_parts)
            parts = _message_parts(message)
        else:
            message = rng.choice(here if rng.random() < 0.75 else messages)
            parts = _message_parts(message)
            roll = rng.random()
            if roll < 0.6 and parts:
                index = rng.randrange(len(parts))
            elif roll < 0.8:
                index = len(parts) + rng.choice([0, 0, 1, 4])
            else:
                index = rng.choice([0, 1, 2])
        arguments["cursor"] = message["id"] if rng.random() < 0.92 else f" {message['id']} "
        arguments["partIndex"] = index
        offset = _char_offset(rng, _part_text(parts[index]) if index < len(parts) else "")
        if offset is not None:
            arguments["charOffset"] = offset
        if rng.random() < 0.15:
            arguments["threadId"] = _thread_argument(rng, history, mine)
        if rng.random() < 0.1:
            arguments["detail"] = "low"  # ignored for a single part
        return arguments
    if kind == "nulls":
        keys = rng.sample(["page", "limit", "detail", "anchor", "partIndex", "charOffset", "partType", "toolName",
                           "cursor", "threadId", "mode", "before", "after"], rng.randint(1, 3))
        if rng.random() < 0.5:
            arguments["cursor"] = _cursor(rng, history, current)
        for key in keys:
            arguments[key] = None
        return arguments
    raise AssertionError(kind)


KINDS = ["threads"] * 11 + ["threads dated"] * 10 + ["from start"] * 23 + ["cursor"] * 31 + ["part"] * 23 + \
    ["nulls"] * 5


def _context(rng: random.Random, history: dict[str, Any]) -> tuple[str, str | None, str | None]:
    mine = [t["id"] for t in history["threads"] if t["resourceId"] == history["resource"]]
    foreign = [t["id"] for t in history["threads"] if t["resourceId"] != history["resource"]]
    scope = "thread" if rng.random() < 0.35 else "resource"
    roll = rng.random()
    thread = (rng.choice(mine) if roll < 0.74 else None if roll < 0.84 else "thread-not-saved-yet" if roll < 0.92
              else rng.choice(foreign))
    roll = rng.random()
    resource = history["resource"] if roll < 0.92 else None if roll < 0.97 else OTHER_RESOURCE
    return scope, thread, resource


def generate(seed: int = SEED) -> tuple[list[dict[str, Any]], list[Case]]:
    rng = random.Random(seed)
    histories = [_history(rng, index) for index in range(HISTORIES)]
    cases: list[Case] = []
    for index, history in enumerate(histories):
        for _ in range(INPUTS_PER_HISTORY):
            scope, thread, resource = _context(rng, history)
            kind = rng.choice(KINDS)
            cases.append(Case(kind, index, scope, thread, resource, _arguments(rng, kind, history, thread)))
    for number, (template, key) in enumerate((t, k) for t in VALID_DATE_TEMPLATES for k in ("before", "after")):
        # A bound beyond every thread: each form V8 reads must list them all, one it cannot read lists none.
        index = number % len(histories)
        created = [_naive(t["createdAt"]) for t in histories[index]["threads"]]
        bound = max(created) + timedelta(days=40) if key == "before" else min(created) - timedelta(days=40)
        scope, thread, resource = _context(rng, histories[index])
        cases.append(Case("threads dated", index, "resource", thread, histories[index]["resource"],
                          {"mode": "threads", key: _date_string(rng, bound, template)}))
    for number, violation in enumerate(SCHEMA_VIOLATIONS * 2):
        index = number % len(histories)
        scope, thread, resource = _context(rng, histories[index])
        cases.append(Case("schema", index, "resource" if number < len(SCHEMA_VIOLATIONS) else "thread", thread,
                          resource, copy.deepcopy(violation)))
    return histories, cases


# --------------------------------------------------------------------------- search mode (fixed hits)

SEARCH_SEED = SEED + 1  # a generator of its own, so the cases above stay as they are
SEARCH_CASES_PER_HISTORY = 6
SEARCH_KINDS = ["search"] * 11 + ["search dated"] * 9
#: Scores as vector stores give them and ``toFixed(2)``'s traps: exact halves of a hundredth (0.125, 0.375: the
#: double is exact, the tie rounds up), near-halves below (1.005 is 1.00499…), negatives, zeros, large values.
SCORES = [0.125, 0.375, 0.625, 0.875, 1.005, 0.005, 0.015, 0.045, 0.995, 2.675, 1.0, 0.0, -0.0, -0.125, -0.005,
          -0.375, 0.5, 0.8123, 1e-7, 0.333333, 12.345, 123456.785, 0.994999, 0.99999, 1e21, 1.5e22, 99.995]
GHOST_THREADS = ["ghost-thread", "thread-not-saved-yet", "CURRENT"]
SEARCH_SCHEMA_VIOLATIONS: list[dict[str, Any]] = [
    {"mode": "bogus"}, {"mode": "search", "query": ""}, {"mode": "search", "query": 5},
    {"mode": "search", "query": "x", "limit": 21}, {"mode": "search", "query": "x", "limit": 0},
    {"mode": "search", "query": "x", "limit": 2.5}, {"mode": "Search", "query": "x"},
    {"query": "", "cursor": "", "limit": 0, "mode": "search"}, {"mode": "search", "query": ["a"]},
    {"mode": "search", "query": "", "threadId": "", "before": 5}, {"mode": "search", "query": "x", "page": 51},
    {"mode": "search", "query": None, "limit": 50}, {"detail": "x", "query": "", "mode": "threads"},
    {"mode": "search", "query": "x", "after": None, "partIndex": -1}, {"mode": 3, "query": True},
]
#: Valid calls of the other modes through the search-enabled tool (same answers as without search).
SEARCH_ENABLED_OTHER_MODES: list[dict[str, Any]] = [
    {"mode": "threads"}, {"mode": "threads", "limit": 2}, {}, {"anchor": "end", "limit": 3},
    {"mode": "messages", "query": "ignored here"}, {"mode": "threads", "query": "x", "threadId": "current"},
]


def _search_score(rng: random.Random) -> float:
    roll = rng.random()
    if roll < 0.45:
        return rng.choice(SCORES)
    if roll < 0.85:
        return round(rng.uniform(0, 1), rng.randint(1, 7))
    return rng.uniform(-0.3, 1.3)


def _hit_text(rng: random.Random) -> str | None:
    roll = rng.random()
    if roll < 0.07:
        return None
    if roll < 0.12:
        return ""
    if roll < 0.2:
        return rng.choice([" ", "\n\n", "\t \n", "\u00a0", "\ufeff", "\u2028", "\u3000 ", "\r\n"])
    if roll < 0.55:  # observation lines, sometimes padded, sometimes with a fence inside
        lines = [f"* {rng.choice(['🔴 ', '🟡 ', ''])}({rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}) "
                 f"{_words(rng, rng.randint(3, 40))}" for _ in range(rng.randint(1, 8))]
        if rng.random() < 0.1:
            lines.insert(1, "```\ncode\n```")
        text = "\n".join(lines)
        return rng.choice(["", " ", "\n", "\u00a0\n"]) + text + rng.choice(["", "\n", "  \n\t"])
    if roll < 0.82:
        return _words(rng, rng.randint(1, 200))
    if roll < 0.94:
        return _words(rng, rng.randint(300, 900))
    return _words(rng, rng.randint(1800, 2600))  # past the 2,000-token budget on its own


def _hit_range(rng: random.Random, history: dict[str, Any]) -> str | None:
    ids = [m["id"] for m in history["messages"]] or ["m0", "m1"]
    a, b, c = rng.choice(ids), rng.choice(ids), rng.choice(ids)
    return rng.choice([None, None, "", f"{a}:{b}", f"{a}:{b}", f"{a}:{b}", a, f"{a}:{b}:{c}", ":", f"{a}:",
                       f":{b}", f"{a}:{b},{c}:{a}"])


def _moment(rng: random.Random, anchors: list[datetime]) -> datetime:
    """A time near one of ``anchors`` (the before/after bounds when given): on it, a millisecond either side, or
    further away."""
    step = rng.choice([timedelta(0), timedelta(0), timedelta(milliseconds=1), timedelta(milliseconds=-1),
                       timedelta(seconds=3), timedelta(seconds=-3), timedelta(hours=5), timedelta(hours=-5),
                       timedelta(days=2), timedelta(days=-2), timedelta(days=40), timedelta(days=-40)])
    return rng.choice(anchors) + step


def _hits(rng: random.Random, history: dict[str, Any], current: str | None, wanted: str | None,
          anchors: list[datetime]) -> tuple[dict[str, Any], ...]:
    mine = [t["id"] for t in history["threads"] if t["resourceId"] == history["resource"]]
    foreign = [t["id"] for t in history["threads"] if t["resourceId"] != history["resource"]]
    count = rng.choice([0, 1, 1, 2, 3, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, rng.randint(0, 25)])
    hits = []
    for _ in range(count):
        roll = rng.random()
        thread = (wanted if roll < 0.3 and wanted else current if roll < 0.5 and current else rng.choice(mine)
                  if roll < 0.8 else rng.choice(foreign) if roll < 0.9 else rng.choice(GHOST_THREADS + [""]))
        hit: dict[str, Any] = {"threadId": thread, "score": _search_score(rng)}
        roll = rng.random()
        if roll < 0.75:
            hit["groupId"] = "".join(rng.choice("0123456789abcdef") for _ in range(16))
        elif roll < 0.85:
            hit["groupId"] = rng.choice(["", "g2", "grp with spaces", "ü"])
        span = _hit_range(rng, history)
        if span is not None:
            hit["range"] = span
        text = _hit_text(rng)
        if text is not None:
            hit["text"] = text
        if rng.random() < 0.7:
            hit["observedAt"] = _iso(_moment(rng, anchors))
        hits.append(hit)
    return tuple(hits)


def _search_arguments(rng: random.Random, kind: str, history: dict[str, Any], scope: str) -> dict[str, Any]:
    from om_eval.om.js.dates import parse_js_date

    mine = [t["id"] for t in history["threads"] if t["resourceId"] == history["resource"]]
    arguments: dict[str, Any] = {"mode": "search"}
    roll = rng.random()
    if roll < 0.88:
        arguments["query"] = _words(rng, rng.randint(1, 8))
    elif roll < 0.92:
        arguments["query"] = rng.choice([" ", "\n", "ünïcødé 😀"])
    elif roll < 0.96:
        arguments["query"] = None  # dropped by the validator: then missing
    # else: no query at all
    if rng.random() < 0.6:
        arguments["limit"] = rng.choice([1, 1, 2, 3, 4, 5, 7, 10, 10, 20, 20, rng.randint(1, 20)])
    if rng.random() < (0.5 if scope == "resource" else 0.15):  # read in resource scope only
        arguments["threadId"] = _thread_argument(rng, history, mine)
    anchors = [_naive(t["createdAt"]) for t in history["threads"]]
    if kind == "search dated":
        for key in rng.choice([["before"], ["after"], ["before", "after"], ["after", "before"]]):
            arguments[key] = _date_string(rng, rng.choice(anchors))
        bounds = [parse_js_date(arguments[key]) for key in ("before", "after") if arguments.get(key)]
        anchors = [b.replace(tzinfo=None) for b in bounds if b is not None] or anchors
    if rng.random() < 0.08:  # options of the other modes, which search ignores
        key, value = rng.choice([("page", 2), ("detail", "high"), ("cursor", "m-unknown"), ("anchor", "end")])
        arguments[key] = value
    arguments["_anchors"] = anchors  # taken out by the caller
    return arguments


def generate_search(histories: list[dict[str, Any]], seed: int = SEARCH_SEED) -> list[Case]:
    """Search cases over the same histories: for each, the fixed hits both sides' searchers answer with."""
    rng = random.Random(seed)
    cases: list[Case] = []
    for index, history in enumerate(histories):
        for _ in range(SEARCH_CASES_PER_HISTORY):
            scope, thread, resource = _context(rng, history)
            if rng.random() < 0.1:
                scope = "thread" if scope == "resource" else "resource"
            kind = rng.choice(SEARCH_KINDS)
            arguments = _search_arguments(rng, kind, history, scope)
            anchors = arguments.pop("_anchors")
            explicit = arguments.get("threadId")
            wanted = thread if scope == "thread" or explicit == "current" else explicit
            cases.append(Case(kind, index, scope, thread, resource, arguments,
                              _hits(rng, history, thread, wanted, anchors), rng.random() < 0.5))
    for number, violation in enumerate(SEARCH_SCHEMA_VIOLATIONS * 2):
        index = number % len(histories)
        scope, thread, resource = _context(rng, histories[index])
        anchors = [_naive(t["createdAt"]) for t in histories[index]["threads"]]
        cases.append(Case("search schema", index, "resource" if number < len(SEARCH_SCHEMA_VIOLATIONS) else "thread",
                          thread, resource, copy.deepcopy(violation), _hits(rng, histories[index], thread, None,
                                                                           anchors)))
    for number, arguments in enumerate(SEARCH_ENABLED_OTHER_MODES * 4):
        index = (number * 5) % len(histories)
        scope, thread, resource = _context(rng, histories[index])
        cases.append(Case("search enabled, other modes", index, scope, thread, resource, copy.deepcopy(arguments),
                          ()))
    return cases


# --------------------------------------------------------------------------- running both sides


@dataclass(frozen=True)
class Batch:
    histories: list[dict[str, Any]]
    cases: list[Case]
    answers: list[tuple[str, str]]
    seconds: float
    #: Per case, what the tool asked ``searchMessages`` for (``asked_text``), ``None`` for cases without search.
    asked: list[str | None]


def _answer(raw: dict[str, Any]) -> tuple[str, str]:
    return ("result", raw["result"]) if "result" in raw else ("thrown", raw["thrown"])


def asked_text(calls: list[dict[str, Any]]) -> str:
    """The calls of ``searchMessages`` as one comparable text (dates as ISO strings with milliseconds)."""
    return json.dumps(calls, sort_keys=True, ensure_ascii=False)


@pytest.fixture(scope="module")
def reference(oracle: NodeFolder) -> Batch:
    """Every generated case, answered by the package in one Node run."""
    histories, cases = generate()
    cases += generate_search(histories)
    payload = {"histories": [{"threads": h["threads"], "messages": h["messages"]} for h in histories],
               "cases": [case.node() for case in cases]}
    started = time.monotonic()
    raw = oracle.run(_NODE_SCRIPT, payload, name="om_eval_recall_oracle_1_31.mjs")
    seconds = time.monotonic() - started
    assert len(raw) == len(cases)
    return Batch(histories, cases, [_answer(item) for item in raw], seconds,
                 [asked_text(item["asked"]) if "asked" in item else None for item in raw])


def python_history(spec: dict[str, Any]) -> Any:
    from om_eval.om.recall.tool import RecallHistory, ThreadInfo

    threads = [ThreadInfo(t["id"], t["resourceId"], _naive(t["createdAt"]), _naive(t["updatedAt"]), t["title"])
               for t in spec["threads"]]
    messages = [Message(m["id"], m["threadId"], m["role"],
                        m["content"] if isinstance(m["content"], str) else tuple(copy.deepcopy(m["content"])),
                        _naive(m["createdAt"])) for m in spec["messages"]]
    return RecallHistory(threads, messages)


class FixedHits:
    """om-eval's side of ``searchMessages`` in a search case: the case's hits, whatever is asked; the calls kept in
    the form the Node script records them."""

    def __init__(self, hits: tuple[dict[str, Any], ...], aware: bool) -> None:
        from om_eval.om.recall.search import SearchHit

        def moment(iso: str) -> datetime:
            return _naive(iso).replace(tzinfo=UTC) if aware else _naive(iso)

        self.hits = [SearchHit(h["threadId"], h["score"], h.get("groupId"), h.get("range"), h.get("text"),
                               moment(h["observedAt"]) if "observedAt" in h else None) for h in hits]
        self.calls: list[dict[str, Any]] = []

    def search(self, query: str, *, top_k: int, thread_id: str | None = None,
               observed_after: datetime | None = None, observed_before: datetime | None = None) -> list[Any]:
        def when(moment: datetime) -> str:
            return _iso(moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment)

        asked = {"threadId": thread_id, "observedAfter": observed_after, "observedBefore": observed_before}
        self.calls.append({"query": query, "topK": top_k, "filter": {
            key: when(value) if isinstance(value, datetime) else value for key, value in asked.items()
            if value is not None}})
        return list(self.hits)


def ours(history: Any, case: Case, searcher: FixedHits | None = None) -> tuple[str, str]:
    from om_eval.om.recall.tool import RecallError, recall, result_json

    try:
        result = recall(history, copy.deepcopy(case.arguments), thread_id=case.thread_id,
                        resource_id=case.resource_id, scope=case.scope, search=searcher)  # type: ignore[arg-type]  # a RecallScope name; FixedHits stands in for a searcher
        return "result", result_json(result)
    except RecallError as error:
        return "thrown", str(error)
    except Exception as error:
        return "crashed", f"{type(error).__name__}: {error}"


def _unreadable_search_date(case: Case, expected: tuple[str, str]) -> bool:
    """A search whose ``before`` or ``after`` JS cannot read (Invalid Date)."""
    from om_eval.om.js.dates import parse_js_date

    return any(isinstance(case.arguments.get(name), str) and case.arguments[name]
               and parse_js_date(case.arguments[name]) is None for name in ("before", "after"))


#: Differences kept on purpose: (case kind, predicate on (case, mastra answer), reason).
KNOWN_DIFFERENCES: list[tuple[str, Callable[[Case, tuple[str, str]], bool], str]] = [
    ("search dated", _unreadable_search_date,
     "an unreadable before/after: 1.31 passes an Invalid Date to Memory.searchMessages, whose filter calls "
     "toISOString() on it and throws 'Invalid time value'; om-eval raises that error, while the stubbed "
     "searchMessages here cannot throw and lets the search run unfiltered"),
]


def _pinned(case: Case, expected: tuple[str, str]) -> str | None:
    for kind, applies, reason in KNOWN_DIFFERENCES:
        if kind == case.kind and applies(case, expected):
            return reason
    return None


def _describe(batch: Batch, case: Case, expected: tuple[str, str], actual: tuple[str, str],
              asked: tuple[str | None, str | None] = (None, None)) -> str:
    history = batch.histories[case.history]
    where = (f"[{case.kind}] history {case.history} ({len(history['threads'])} threads, "
             f"{len(history['messages'])} messages, resource {history['resource']!r}), scope={case.scope}, "
             f"thread={case.thread_id!r}, resource={case.resource_id!r}\n    input={short(case.arguments, 300)}")
    lines = [where]
    if case.hits is not None:
        lines.append(f"    {len(case.hits)} hits ({'aware' if case.aware else 'naive'} datetimes on our side): "
                     f"{short(list(case.hits), 600)}")
    lines += [f"    mastra {expected[0]}: {short(expected[1])}", f"    ours   {actual[0]}: {short(actual[1])}"]
    if expected[0] == actual[0] and expected[1] != actual[1]:
        lines.append("    " + first_difference(expected[1], actual[1]))
    if asked[0] != asked[1]:
        lines += [f"    mastra asked searchMessages for {asked[0]}", f"    ours   asked the searcher for   {asked[1]}"]
    return "\n".join(lines)


@dataclass(frozen=True)
class Outcome:
    compared: int
    identical: int
    pinned: list[str]
    mismatches: list[tuple[Case, str]]
    python_seconds: float


@pytest.fixture(scope="module")
def outcome(reference: Batch) -> Outcome:
    started = time.monotonic()
    histories = [python_history(spec) for spec in reference.histories]
    mismatches: list[tuple[Case, str]] = []
    pinned: list[str] = []
    for case, expected, asked in zip(reference.cases, reference.answers, reference.asked, strict=True):
        searcher = None if case.hits is None else FixedHits(case.hits, case.aware)
        actual = ours(histories[case.history], case, searcher)
        ours_asked = None if searcher is None else asked_text(searcher.calls)
        if actual == expected and ours_asked == asked:
            continue
        reason = _pinned(case, expected)
        if reason is not None:
            pinned.append(reason)
            continue
        mismatches.append((case, _describe(reference, case, expected, actual, (asked, ours_asked))))
    compared = len(reference.cases)
    return Outcome(compared, compared - len(mismatches) - len(pinned), pinned, mismatches,
                   time.monotonic() - started)


def mismatch_report(mismatches: list[tuple[Any, str]], compared: int, per_kind: int = 2, most: int = 10) -> str:
    """Counts per case kind, then up to ``most`` differing cases (``per_kind`` of each kind first)."""
    kinds = Counter(case.kind for case, _ in mismatches)
    taken: Counter[str] = Counter()
    chosen: set[int] = set()
    for number, (case, _) in enumerate(mismatches):  # a few of each kind first, then the next ones in order
        if taken[case.kind] < per_kind and len(chosen) < most:
            taken[case.kind] += 1
            chosen.add(number)
    for number in range(len(mismatches)):
        if len(chosen) >= most:
            break
        chosen.add(number)
    shown = [text for number, (_, text) in enumerate(mismatches) if number in chosen]
    return (f"{len(mismatches)} of {compared} cases differ from @mastra/memory {VERSION} "
            f"(by kind: {dict(kinds.most_common())}):\n\n" + "\n\n".join(shown))


# --------------------------------------------------------------------------- the tests


def test_recall_matches_mastra_1_31(
    outcome: Outcome, reference: Batch, oracle: NodeFolder, record_property: Callable[[str, object], None],
    case_counts: dict[str, tuple[float, float]],
) -> None:
    record_property("mastra_cases", outcome.compared)
    record_property("mastra_identical", outcome.identical)
    searched = sum(case.hits is not None for case in reference.cases)
    differing = sum(case.hits is not None for case, _ in outcome.mismatches)
    pinned = len(outcome.pinned)  # every pinned case is a search (KNOWN_DIFFERENCES)
    searched_same = searched - differing - pinned
    case_counts["recall tool (messages, threads, schema)"] = (
        outcome.compared - searched, outcome.identical - searched_same)
    case_counts[f"recall tool with search enabled (fixed hits; {pinned} pinned apart)"] = (searched, searched_same)
    case_counts["_timings recall"] = (round(oracle.install_seconds, 1), round(reference.seconds, 2))
    if outcome.pinned:
        print(f"\npinned differences: {dict(Counter(outcome.pinned))}")
    if outcome.mismatches:
        pytest.fail(mismatch_report(outcome.mismatches, outcome.compared), pytrace=False)


def test_enough_recall_cases(reference: Batch) -> None:
    assert len(reference.cases) >= MIN_CASES
    kinds = Counter(case.kind for case in reference.cases)
    assert min(kinds.values()) >= 20, kinds


THROWN_PREFIXES = ["Could not resolve cursor message", "Thread does not belong", "Part index", "Thread not found",
                   "No active thread context", "Cursor is required", "page must be >= 0", "Message ",
                   "The cursor ", "Resource ID is required", "Current thread is required", "No thread found",
                   "Thread with id", "Could not resolve current thread"]


def test_recall_cases_reach_every_behaviour(reference: Batch) -> None:
    """The generated cases reach each rule of the tool often enough, judged on the package's own answers."""
    found: Counter[str] = Counter()
    for case, (how, text) in zip(reference.cases, reference.answers, strict=True):
        found[f"{how} ({case.kind})"] += 1
        if how == "thrown":
            found["thrown: " + next((p for p in THROWN_PREFIXES if text.startswith(p)), "other")] += 1
            continue
        checks = {
            "low-detail hint": '[recall cursor=\\"' in text and 'for more]' in text,
            "page hard-truncated": '"truncated":true' in text and '"messages"' in text,
            "tokenOffset > 0": '"tokenOffset":0' not in text and '"tokenOffset"' in text,
            "nextCharOffset": '"nextCharOffset"' in text,
            "chunk note": "To continue this part" in text,
            "part fallback to next message": "; showing partIndex" in text,
            "high detail one part": "High detail returns 1 part at a time" in text,
            "range hint": "looks like a range" in text,
            "cross-thread cursor": "Cursor does not belong to the active thread" in text,
            "default thread note": "threadId wasn't passed" in text,
            "thread listing": '"threads":"- **' in text,
            "no threads found": "No threads found matching" in text,
            "threads hasMore": '"hasMore":true' in text,
            "validation error": "Tool input validation failed" in text,
            "filters matched nothing": "no message parts matched" in text,
            "empty page": "(no messages found on page" in text or "(no visible message parts" in text,
            "hasNextPage": '"hasNextPage":true' in text,
            "hasPrevPage": '"hasPrevPage":true' in text,
            "tool result shown": "[Tool Result: " in text,
            "step-start shown": "[step-start]" in text,
            "image or file": "[Image" in text or "[File" in text,
            "could not resolve current": "Could not resolve current thread." in text,
        }
        for name, hit in checks.items():
            found[name] += hit
    print("\nrecall coverage:\n  " + "\n  ".join(f"{k}: {v}" for k, v in sorted(found.items())))
    must = {"low-detail hint": 40, "page hard-truncated": 6, "tokenOffset > 0": 6, "nextCharOffset": 5,
            "chunk note": 5, "part fallback to next message": 5, "high detail one part": 15, "range hint": 8,
            "cross-thread cursor": 5, "default thread note": 15, "thread listing": 40, "no threads found": 5,
            "threads hasMore": 4, "validation error": 40, "filters matched nothing": 5, "empty page": 8,
            "hasNextPage": 30, "hasPrevPage": 20, "tool result shown": 30, "step-start shown": 30,
            "image or file": 15, "could not resolve current": 2,
            "thrown: Could not resolve cursor message": 10, "thrown: Thread does not belong": 10,
            "thrown: Part index": 3, "thrown: No active thread context": 2,
            "thrown: Cursor is required": 2, "thrown: page must be >= 0": 2}
    thin = {name: found[name] for name, least in must.items() if found[name] < least}
    assert not thin, f"the generator no longer reaches these behaviours often enough: {thin}"


def test_search_cases_reach_every_behaviour(reference: Batch) -> None:
    """The search cases reach each rule of 1.31's search formatting often enough, judged on the package's answers."""
    found: Counter[str] = Counter()
    for case, (how, text), asked in zip(reference.cases, reference.answers, reference.asked, strict=True):
        if case.hits is None:
            continue
        found[f"{how} ({case.kind})"] += 1
        if how == "thrown":
            found[f"thrown: {text[:40]}"] += 1
            continue
        calls = json.loads(asked or "[]")
        checks = {
            "searchMessages asked": bool(calls),
            "asked with threadId": any("threadId" in c["filter"] for c in calls),
            "asked with a date": any("observedAfter" in c["filter"] or "observedBefore" in c["filter"] for c in calls),
            "asked for more than kept": any(c["topK"] > json.loads(text).get("count", 0) for c in calls),
            "no matching messages": "No matching messages found." in text,
            "current thread memory": "### Current thread memory" in text,
            "other thread memory": "### Older memory from another thread" in text,
            "thread not found (no title)": bool(calls) and any(
                f"- thread: {h['threadId']}\\n" in text for h in case.hits),
            "untitled": "(untitled)" in text,
            "range unknown end": "through ID (unknown)" in text,
            "range unavailable": "raw message range unavailable" in text,
            "no group id": any(section.count("\\n- score:") > section.count("\\n- observation group:")
                               for section in text.split("### ")),
            "text unavailable": "_Observation text unavailable._" in text,
            "results truncated": "... [truncated ~" in text and '"results"' in text,
            "count 20": '"count":20' in text,
            "validation error": "Tool input validation failed" in text,
            "listing through search-enabled tool": '"threads":' in text or '"messages":' in text,
        }
        for name, hit in checks.items():
            found[name] += hit
    print("\nrecall search coverage:\n  " + "\n  ".join(f"{k}: {v}" for k, v in sorted(found.items())))
    must = {"searchMessages asked": 150, "asked with threadId": 30, "asked with a date": 40,
            "asked for more than kept": 30, "no matching messages": 10, "current thread memory": 30,
            "other thread memory": 60, "thread not found (no title)": 10, "untitled": 20, "range unknown end": 10,
            "range unavailable": 20, "no group id": 20, "text unavailable": 20, "results truncated": 15,
            "validation error": 25, "listing through search-enabled tool": 15}
    thin = {name: found[name] for name, least in must.items() if found[name] < least}
    assert not thin, f"the search cases no longer reach these behaviours often enough: {thin}"
