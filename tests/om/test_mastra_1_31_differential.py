"""Differential tests: om-eval's ``v1_31`` text rules against Mastra's published ``@mastra/memory`` 1.31.0.

Why: ``om.mastra_release=v1_31`` changes two helpers that the 1.10 suite (``test_mastra_differential.py``) cannot
check, because 1.10 has neither rule:

* the repetition detector (``degenerate_strategy="v1.31"``): 1.10's window and long-line checks, then the share
  of exactly repeated lines among those of at least 24 UTF-16 units once JS-trimmed (>= 20 such lines, > 50 %);
* ``optimize_for_context(text, keep_link_labels=True)``: a bracket followed by ``(`` (a markdown link label) stays.

As in the 1.10 suite, the pinned packages are installed with npm once (per ``$OM_EVAL_CACHE_DIR``), seeded
generated inputs go in one batch to a small Node script of ours that calls the package's public entry
``@mastra/memory/processors`` (``parseObserverOutput`` for the degenerate flag, ``optimizeObservationsForContext``),
and every answer is compared with ours. Nothing of the package is copied here; it is only executed. The
degenerate texts sit on both sides of each threshold of the new rule (19/20/21 counted lines, a repeated share of
exactly one half and just above, lines of 23/24/25 units after trimming with emoji and lone surrogates, whitespace
that JS ``trim`` removes next to characters that it keeps, total lengths around 2,000 units), next to 1.10's
window and long-line inputs; ``test_degenerate_cases_reach_every_threshold`` checks that they do.

Marker ``mastra``; skipped, saying why, without node/npm or when the install fails (no registry). The counts are
printed at the end of the run under "compared with @mastra/memory 1.31.0".
"""

from __future__ import annotations

import random
import string
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from om_eval.om.context import optimize_for_context
from om_eval.om.history_lines import format_history_lines
from om_eval.om.js.text import js_trim, utf16_len
from om_eval.om.parsing import (
    CONTINUATION_HINT_TAGS,
    detect_degenerate,
    is_degenerate,
    parse_observer_output,
    parse_reflector_output,
)
from om_eval.om.records import Message
from tests.npm_oracle import NodeFolder, node_folder
from tests.om.test_mastra_differential import (
    NODE_DISPATCH,
    NODE_LOCAL,
    ODD_SPACE,
    Batch,
    Comparison,
    _degenerate_input,
    _js_datetime,
    _js_parts,
    _long_line,
    _observer_output,
    _optimize_input,
    _random_now,
    _repeat,
    answer_all,
    mismatches_of,
)
from tests.om.test_mastra_engine_differential import ENGINE_PACKAGES_1_31

pytestmark = pytest.mark.mastra

SEED = 20260131
VERSION = ENGINE_PACKAGES_1_31["@mastra/memory"]

# --------------------------------------------------------------------------- the oracle

_NODE_SCRIPT = r"""
// Written by om-eval's tests/om/test_mastra_1_31_differential.py: evaluates cases with @mastra/memory 1.31.
const om = await import("@mastra/memory/processors");
// 1.31's default observation extractors: the two continuation hints, built as its own factories build them.
const hints = ["current-task", "suggested-response"].map((name) =>
  new om.Extractor({ name, instructions: "hint",
    metadataKeyPath: name === "current-task" ? "currentTask" : "suggestedResponse" }, true));
// What a synchronous observation stores for the thread: the extracted value, else the parsed hint (sync.ts).
const stored = (r, slug, parsed) => {
  const value = r.extractedValues?.[slug];
  return (value !== undefined && value !== null && value !== "" ? value : parsed) ?? null;
};
const handlers = {
  parseObserverOutput: (text) => ({ degenerate: Boolean(om.parseObserverOutput(text).degenerate) }),
  parseObserverOutputWithHints: (text) => {
    const r = om.parseObserverOutput(text, hints);
    return { observations: r.observations, currentTask: stored(r, "current-task", r.currentTask),
             suggestedResponse: stored(r, "suggested-response", r.suggestedContinuation),
             threadTitle: r.threadTitle ?? null, degenerate: Boolean(r.degenerate) };
  },
  optimizeObservationsForContext: (text) => om.optimizeObservationsForContext(text),
  formatMessagesForObserver: (messages, maxPartLength) =>
    om.formatMessagesForObserver(
      messages.map((m, i) => ({ id: `m${i}`, ...m, createdAt: local(m.createdAt) })),
      maxPartLength ? { maxPartLength } : undefined,
    ),
};
"""


class Oracle(NodeFolder):
    """The installed 1.31 packages and our Node script."""

    def run(self, cases: list[tuple[str, list[Any]]], tz: str = "UTC") -> list[dict[str, Any]]:  # type: ignore[override]  # this oracle runs one script
        """Evaluate ``(reference function, args)`` cases in one Node process; one result dict per case."""
        return super().run(NODE_LOCAL + _NODE_SCRIPT + NODE_DISPATCH, cases, name="om_eval_oracle_1_31.mjs", tz=tz)


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Oracle:
    found = node_folder(tmp_path_factory, "mastra-engine-oracle-1.31", ENGINE_PACKAGES_1_31)
    return Oracle(found.node, found.folder, found.install_seconds)


# --------------------------------------------------------------------------- the tally, printed at the end

_COUNTS = pytest.StashKey[dict[str, tuple[float, float]]]()


class _Summary:
    """A plugin registered by the ``case_counts`` fixture: prints the counts once the run is over."""

    def __init__(self, counts: dict[str, tuple[float, float]]) -> None:
        self.counts = counts

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        counts = dict(self.counts)
        timings = counts.pop("_timings", None)
        if not counts:
            return
        terminalreporter.write_sep("-", f"compared with @mastra/memory {VERSION}")
        for name, (cases, identical) in counts.items():
            terminalreporter.write_line(f"{name}: {int(cases)} cases, {int(identical)} identical")
        total = sum(int(cases) for cases, _ in counts.values())
        same = sum(int(identical) for _, identical in counts.values())
        terminalreporter.write_line(f"total: {total} cases, {same} identical")
        if timings is not None:
            terminalreporter.write_line(f"npm install or cache check: {timings[0]} s, Node oracle run: {timings[1]} s")


@pytest.fixture(scope="module")
def case_counts(request: pytest.FixtureRequest) -> dict[str, tuple[float, float]]:
    """Per comparison, (cases compared with 1.31.0, cases identical), plus ``"_timings"``."""
    counts = request.config.stash.setdefault(_COUNTS, {})
    name = "om-eval-mastra-1.31-summary"
    if not request.config.pluginmanager.has_plugin(name):
        request.config.pluginmanager.register(_Summary(counts), name)
    return counts


# --------------------------------------------------------------------------- generated degenerate-check inputs

#: Characters JS ``trim`` removes (none of them splits a line: only "\n" does).
TRIMMED = [" ", "\t", "\r", "\x0b", "\x0c", "\u00a0", "\u1680", "\u2000", "\u200a", "\u2028", "\u2029", "\u202f",
           "\u205f", "\u3000", "\ufeff"]
#: Characters JS ``trim`` keeps although they look blank (Python's ``str.strip`` removes the first four).
KEPT = ["\x1c", "\x1f", "\x85", "\x1e", "\u200b", "\u180e", "\u2060"]
#: One UTF-16 unit each.
NARROW = list(string.ascii_letters + string.digits) * 3 + ["é", "ß", "日", "本", "→", "ñ", "-", ".", ",", ":"]
#: Two UTF-16 units each (one code point).
WIDE = ["😀", "🔴", "🟡", "🧪", "𝔘", "👍", "🇫"]
LONE = ["\ud83d", "\ude00"]


def _body(rng: random.Random, units: int) -> str:
    """A line of exactly ``units`` UTF-16 units that JS ``trim`` leaves whole (its ends are not JS whitespace)."""
    chars: list[str] = []
    left = units
    while left > 0:
        roll = rng.random()
        if left >= 2 and roll < 0.15:
            piece = rng.choice(WIDE)
        elif roll < 0.18:
            piece = rng.choice(KEPT)
        elif roll < 0.19:
            piece = rng.choice(LONE)
        elif roll < 0.27 and len(chars) > 0 and left > 1:
            piece = rng.choice([" ", " ", "\t", "\u00a0", "\u3000"])  # inside the line: kept
        else:
            piece = rng.choice(NARROW)
        chars.append(piece)
        left -= utf16_len(piece)
    if chars and js_trim(chars[-1]) == "":
        chars[-1] = "z"
    return "".join(chars)


def _pad(rng: random.Random) -> str:
    """Whitespace that JS ``trim`` removes, often none."""
    if rng.random() < 0.55:
        return ""
    return "".join(rng.choice(TRIMMED) for _ in range(rng.randint(1, 4)))


def _counted_units(rng: random.Random) -> int:
    return rng.choice([24, 24, 24, 25, 25, 26, 30, 40, 60, 120])


def _decoy_units(rng: random.Random) -> int:
    return rng.choice([23, 23, 23, 22, 20, 12, 5, 1, 0])


def _repeated_lines_input(rng: random.Random) -> str:
    """Lines of >= 24 units (distinct ones and exact repeats) among shorter decoys, about 2,000 units in all.

    The counted lines number 19, 20 or 21 most of the time, the repeats about half of them; repeats carry
    different JS-trimmable padding (the same line once trimmed), while look-alikes differ by a character that
    JS ``trim`` keeps (a different line).
    """
    counted = rng.choice([19, 20, 21] * 6 + [18, 22, 23, 25, 30, 40, 41, 60])
    half = counted // 2
    repeats = rng.choice([half - 1, half, half, half + 1, half + 1, half + 2, rng.randint(0, counted - 1)])
    repeats = max(0, min(counted - 1, repeats))
    distinct: list[str] = []
    for _ in range(counted - repeats):
        if distinct and rng.random() < 0.15:  # a look-alike: an earlier line plus a character trim keeps
            base = rng.choice(distinct)
            extra = rng.choice(KEPT)
            distinct.append(base + extra if rng.random() < 0.5 else extra + base)
        else:
            distinct.append(_body(rng, _counted_units(rng)))
    counted_lines = distinct + [rng.choice(distinct) for _ in range(repeats)]
    decoys = []
    for _ in range(rng.randint(0, 25)):
        if decoys and rng.random() < 0.3:
            decoys.append(rng.choice(decoys))  # repeated short lines do not count
        else:
            decoys.append(_body(rng, _decoy_units(rng)))
    lines = [_pad(rng) + line + _pad(rng) for line in counted_lines + decoys]
    rng.shuffle(lines)
    text = "\n".join(lines)
    target = rng.choice([1998, 1999, 2000, 2000, 2001, 2002, rng.randint(1800, 1997), rng.randint(2003, 2400),
                         rng.randint(2400, 4000)])
    return _pad_to(rng, text, target)


def _pad_to(rng: random.Random, text: str, target: int) -> str:
    """``text`` with uncounted lines (< 24 units once trimmed) added until it is ``target`` UTF-16 units long."""
    pieces = [text]
    length = utf16_len(text)
    while length < target:
        room = target - length - 1  # the line feed
        if room < 0:
            pieces[-1] += "x"
            length += 1
            continue
        kind = rng.random()
        if kind < 0.15:
            line = rng.choice(TRIMMED) * min(room, rng.randint(1, 80))  # blank once trimmed
        elif kind < 0.3:
            pad = rng.choice([" ", "\u3000", "\t"]) * min(room, rng.randint(1, 30))
            line = pad + _body(rng, max(0, min(room - len(pad), 23)))
        else:
            line = _body(rng, min(room, rng.choice([23, 23, 22, 15, 8])))
        pieces.append(line)
        length += 1 + utf16_len(line)
    return "\n".join(pieces) if len(pieces) > 1 else text


def _loop_block_input(rng: random.Random) -> str:
    """A block of distinct lines repeated whole (the window sampler's blind spot), with unique lines around it."""
    block = [_pad(rng) + _body(rng, rng.choice([24, 25, 30, 45, 80, 150])) for _ in range(rng.randint(2, 25))]
    rounds = rng.choice([2, 2, 3, 4, 8, rng.randint(1, 40)])
    fresh = [_body(rng, rng.choice([23, 24, 25, 40])) for _ in range(rng.randint(0, 12))]
    lines = [*fresh[: len(fresh) // 2], *(block * rounds), *fresh[len(fresh) // 2 :]]
    text = rng.choice(["\n", "\n", "\r\n", "\n\n"]).join(lines)
    if rng.random() < 0.5:
        text = _pad_to(rng, text, rng.choice([1999, 2000, 2001, rng.randint(2000, 5000)]))
    return text


def _long_line_input(rng: random.Random) -> str:
    """1.10's long-line rule: one line of about 50,000 units among ordinary lines."""
    line = _long_line(rng, rng.choice([49_990, 49_999, 50_000, 50_001, 50_010]))
    around = [_body(rng, rng.choice([10, 24, 30])) for _ in range(rng.randint(0, 6))]
    around.insert(rng.randint(0, len(around)), line)
    return "\n".join(around)


def _observer_outputs(rng: random.Random) -> str:
    """Several plausible observer outputs joined: long, line-oriented, rarely repeated."""
    now = _random_now(rng)
    return "\n".join(_observer_output(rng, now) for _ in range(rng.randint(1, 12)))


def _degenerate_case(rng: random.Random) -> list[Any]:
    roll = rng.random()
    if roll < 0.6:
        text = _repeated_lines_input(rng)
    elif roll < 0.75:
        text = _loop_block_input(rng)
    elif roll < 0.85:
        text = _degenerate_input(rng)  # 1.10's: window repeats, with noise, sometimes a huge line
    elif roll < 0.9:
        text = _long_line_input(rng)
    else:
        text = _observer_outputs(rng)
    return [text]


# --------------------------------------------------------------------------- generated optimisation inputs

_LINK_FRAGMENTS = [
    "[label](http://example.com)", "[link](https://a.b/c?d=(e))", "[x](", "](", "[x]", "(", ")", "[a](b)",
    "[🔴 urgent](u)", "[🟡 later](u) ", "[O3](x)", "[O3] [doc](x)", "\n[O2-N1] [a](b)", "[3 items collapsed](x)",
    "[12 items collapsed - ID: ab12](u)", "[](x)", "[a]\n(b)", "[a] (b)", "[a]((b", "[[a](b)]", "[a](b)[c]",
    "![img](cat.png)", "[a\nb](c)", "[label](", "[note] (x)", "[x](y) -> [z](w)", "[unclosed (x)", "]](", "[[x]](y)",
    "[a]\t(b)", "[a]\u00a0(b)", "[ 5 items collapsed](u)", "[tag, other]", "([x](y))", "[x](😀)", "[😀](x)",
]


def _link_optimize_input(rng: random.Random) -> str:
    """1.10's optimisation input cut at random points, with markdown-link fragments put in between."""
    base = _optimize_input(rng)
    cuts = sorted(rng.randint(0, len(base)) for _ in range(rng.randint(1, 8)))
    pieces, start = [], 0
    for cut in cuts:
        pieces.append(base[start:cut])
        start = cut
        pieces.append("".join(rng.choice(_LINK_FRAGMENTS + ODD_SPACE + [" ", "\n"]) for _ in range(rng.randint(1, 3))))
    pieces.append(base[start:])
    return "".join(pieces)


# --------------------------------------------------------------------------- the comparisons


def _degenerate_flag(text: str) -> dict[str, bool]:
    return {"degenerate": parse_observer_output(text, degenerate_strategy="v1.31").degenerate}


def _reflector_flag(text: str) -> dict[str, bool]:
    return {"degenerate": parse_reflector_output(text, degenerate_strategy="v1.31").degenerate}


# --------------------------------------------------------------------------- generated Observer histories

HISTORY_TEXTS = ["Hi there", "I adopted a beagle named Toby 🐶", "line one\nline two", "x" * 80, "  padded  ", "",
                 "   ", "café ☕ at 9", "🔴" * 30, "a😀" * 20 + "end", "Plan: 1) pack 2) drive\n\n3) sleep"]
#: Steps between consecutive messages: the same minute (time left out), the next minute, across midnight.
HISTORY_STEPS = [timedelta(0), timedelta(seconds=5), timedelta(seconds=59), timedelta(minutes=1),
                 timedelta(minutes=37), timedelta(hours=5), timedelta(days=1), timedelta(days=33)]


def _history_part(rng: random.Random) -> dict[str, Any]:
    roll = rng.random()
    if roll < 0.6:
        return {"type": "text", "text": rng.choice(HISTORY_TEXTS)}
    if roll < 0.75:
        return {"type": "reasoning", "reasoning": rng.choice(HISTORY_TEXTS)}
    name = rng.choice([None, "cat.png", "  notes.pdf ", "   "])
    if roll < 0.88:
        part = {"type": "image", "image": "data:image/png;base64,AAAA", "mimeType": rng.choice([None, "image/png"])}
    else:
        part = {"type": "file", "data": "data:application/pdf;base64,AAAA", "mimeType": "application/pdf"}
    if name is not None:
        part["filename"] = name
    return {k: v for k, v in part.items() if v is not None}


def _history_case(rng: random.Random) -> list[Any]:
    moment = _random_now(rng).replace(second=rng.choice([0, 30, 55]))
    messages = []
    for _ in range(rng.randint(0, 7)):
        moment += rng.choice(HISTORY_STEPS)
        if rng.random() < 0.4:
            content: Any = rng.choice(HISTORY_TEXTS)
        else:
            content = {"format": 2, "parts": [_history_part(rng) for _ in range(rng.randint(1, 3))]}
        messages.append({"role": rng.choice(["user", "assistant"]), "createdAt": _js_parts(moment),
                         "content": content})
    return [messages, rng.choice([None, None, 5, 20, 64, 500])]


def _our_part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part["type"]
    if kind == "reasoning":
        return {"type": "reasoning", "text": part["reasoning"]}
    if kind in ("image", "file"):
        return {"type": kind, "name": part.get("filename"), "mime_type": part.get("mimeType")}
    return dict(part)


def _our_history(specs: list[dict[str, Any]], max_part_length: int | None) -> str:
    messages = []
    for index, spec in enumerate(specs):
        content = spec["content"]
        if not isinstance(content, str):
            content = tuple(_our_part(part) for part in content["parts"])
        messages.append(Message(f"m{index}", "t", spec["role"], content, _js_datetime(spec["createdAt"])))
    return format_history_lines(messages, max_part_length)


# --------------------------------------------------------------------------- generated replies with hint sections

#: Hint sections as models write them, and as they go wrong: line-anchored or inside a line, upper case, empty,
#: blank, JSON-quoted, twice, unclosed, nested, and 1.27's ``<extracted-values>`` JSON object (valid or not).
HINT_SECTIONS = [
    "<current-task>\nPrimary: plan the trip\n</current-task>", "<current-task>\nSecondary: pack\n</current-task>",
    "<suggested-response>\nAsk about Lisbon\n</suggested-response>",
    "<suggested-response>Say hi 👋</suggested-response>",
    " <current-task>inline task</current-task> ", "<CURRENT-TASK>\nLoud\n</Current-Task>",
    "<current-task></current-task>",
    "<current-task>\n   \n</current-task>", '<current-task>"quoted task"</current-task>',
    '<suggested-response>"half" quoted</suggested-response>', "<current-task>42</current-task>",
    "<current-task>[1, 2]</current-task>", "<current-task>null</current-task>",
    "<suggested-response>- step</suggested-response>",
    "<current-task>\nunclosed", "</current-task>", "<current-<current-task>x</current-task>task>y</current-task>",
    "\t<suggested-response>\n\t tabbed \n</suggested-response>\u00a0\n\n",
    '<extracted-values>{"current-task": "from json", "suggested-response": ""}</extracted-values>',
    '<extracted-values>\n{"suggested-response": "json reply", "current-task": 7}\n</extracted-values>',
    '<extracted-values>{"current-task": "  "}</extracted-values>', "<extracted-values>not json</extracted-values>",
    "<extracted-values>[1]</extracted-values>", "<extracted-values>{\"current-task\": NaN}</extracted-values>",
    "<extracted-values>Write only the extracted values JSON object here.</extracted-values>",
    "<thread-title>Trip</thread-title>",
]


def _hinted_reply(rng: random.Random) -> list[Any]:
    """1.10's generated Observer reply with hint sections put in at line starts, inside lines and between tags."""
    text = _observer_output(rng, _random_now(rng))
    for _ in range(rng.randint(0, 5)):
        cut = rng.randint(0, len(text))
        if rng.random() < 0.5 and "\n" in text:
            cut = rng.choice([i + 1 for i, ch in enumerate(text) if ch == "\n"])
        text = text[:cut] + rng.choice(HINT_SECTIONS) + rng.choice(["\n", "", " ", "\r\n"]) + text[cut:]
    return [text]


def _our_hinted_reply(text: str) -> dict[str, Any]:
    parsed = parse_observer_output(text, degenerate_strategy="v1.31", hint_tags=CONTINUATION_HINT_TAGS)
    return {"observations": parsed.observations, "currentTask": parsed.current_task,
            "suggestedResponse": parsed.suggested_response, "threadTitle": parsed.thread_title,
            "degenerate": parsed.degenerate}


DEGENERATE_CASES = 1_400
OPTIMIZE_CASES = 1_200
HISTORY_CASES = 1_000
HINT_CASES = 1_000


COMPARISONS = [
    Comparison("parseObserverOutput", _degenerate_flag, _repeat(DEGENERATE_CASES, _degenerate_case)),
    Comparison("optimizeObservationsForContext", lambda text: optimize_for_context(text, keep_link_labels=True),
               _repeat(OPTIMIZE_CASES, lambda rng: [_link_optimize_input(rng)])),
    Comparison("formatMessagesForObserver", _our_history, _repeat(HISTORY_CASES, _history_case)),
    Comparison("parseObserverOutputWithHints", _our_hinted_reply, _repeat(HINT_CASES, _hinted_reply)),
]
#: Extra views on the answers of one reference call: 1.31's Reflector runs the same detector on its raw output
#: (the parser is not exported, so its flag is checked against parseObserverOutput's on the same texts).
VIEWS = {"parseReflectorOutput (degenerate)": ("parseObserverOutput", _reflector_flag)}
NAMES = {"parseObserverOutput": "parseObserverOutput (degenerate)",
         "optimizeObservationsForContext": "optimizeObservationsForContext",
         "formatMessagesForObserver": "formatMessagesForObserver (1.15+ history lines)",
         "parseObserverOutputWithHints": "parseObserverOutput (1.27+ hint sections, as stored)"}


@pytest.fixture(scope="module")
def reference(oracle: Oracle) -> Batch:
    """Every generated case, answered by Mastra 1.31 in one Node run."""
    return answer_all(oracle, COMPARISONS, SEED)


def _compare(
    label: str, reference_name: str, ours: Callable[..., Any], reference: Batch,
    record_property: Callable[[str, object], None], case_counts: dict[str, tuple[float, float]],
) -> None:
    mismatches = mismatches_of(reference, reference_name, ours)
    compared = len(reference.cases[reference_name])
    record_property("mastra_cases", compared)
    record_property("mastra_identical", compared - len(mismatches))
    case_counts[label] = (compared, compared - len(mismatches))
    assert not mismatches, f"{len(mismatches)} of {compared} differ from {VERSION}:\n" + "\n".join(mismatches[:5])


@pytest.mark.parametrize("comparison", [pytest.param(c, id=c.reference) for c in COMPARISONS])
def test_matches_mastra_1_31(
    comparison: Comparison, reference: Batch, record_property: Callable[[str, object], None],
    case_counts: dict[str, tuple[float, float]],
) -> None:
    _compare(NAMES[comparison.reference], comparison.reference, comparison.ours, reference, record_property,
             case_counts)


@pytest.mark.parametrize("view", list(VIEWS))
def test_views_match_mastra_1_31(
    view: str, reference: Batch, record_property: Callable[[str, object], None],
    case_counts: dict[str, tuple[float, float]],
) -> None:
    reference_name, ours = VIEWS[view]
    _compare(view, reference_name, ours, reference, record_property, case_counts)


def _features(text: str) -> dict[str, Any]:
    """What decides the 1.31 verdict for one text, measured independently of om-eval's detector."""
    lines = [js_trim(line) for line in text.split("\n")]
    counted = [line for line in lines if utf16_len(line) >= 24]
    repeats = len(counted) - len(set(counted))
    return {
        "units": utf16_len(text),
        "counted": len(counted),
        "repeats": repeats,
        "ratio": repeats / len(counted) if counted else 0.0,
        "edge_lengths": {utf16_len(line) for line in lines} & {23, 24, 25},
        "surrogate_edges": any(utf16_len(line) in (23, 24, 25) and utf16_len(line) != len(line) for line in lines),
        "strip_differs": any(line.strip() != js_trim(line) for line in text.split("\n")),
    }


def test_degenerate_cases_reach_every_threshold(
    reference: Batch, case_counts: dict[str, tuple[float, float]]
) -> None:
    """The generated texts sit on both sides of each threshold, and Mastra's verdict goes both ways there."""
    buckets: Counter[str] = Counter()
    for (text,), answer in zip(reference.cases["parseObserverOutput"], reference.answers["parseObserverOutput"],
                               strict=True):
        flag = answer["ok"]["degenerate"]
        old = is_degenerate(text)  # 1.10's window and long-line checks alone
        found = _features(text)
        buckets[f"verdict {flag}"] += 1
        buckets[f"1.10 checks fire {old}"] += 1
        if not old and found["units"] >= 2000:
            buckets[f"line rule decides {flag}"] += 1
            if found["counted"] in (19, 20, 21):
                twice, counted = 2 * found["repeats"], found["counted"]
                side = ("above half" if twice > counted else "exactly half" if twice == counted
                        else "one short of half" if twice == counted - 1 else "below half")
                buckets[f"{counted} counted lines, repeats {side}, verdict {flag}"] += 1
        if found["counted"] >= 20 and found["ratio"] > 0.5 and not old:
            buckets[f"line rule would fire, {'>=' if found['units'] >= 2000 else '<'} 2000 units, verdict {flag}"] += 1
        if 1990 <= found["units"] <= 2010:
            buckets["total length 1990..2010"] += 1
        for units in found["edge_lengths"]:
            buckets[f"has a line of {units} units once trimmed"] += 1
        buckets["has a 23..25-unit line with surrogates"] += found["surrogate_edges"]
        buckets["Python strip differs from JS trim"] += found["strip_differs"]
    print("\ndegenerate-input coverage:\n  " + "\n  ".join(f"{k}: {v}" for k, v in sorted(buckets.items())))
    must = {
        "verdict True": 150, "verdict False": 150, "1.10 checks fire True": 50,
        "line rule decides True": 100, "line rule decides False": 100,
        "19 counted lines, repeats above half, verdict False": 10,
        "20 counted lines, repeats exactly half, verdict False": 10,
        "20 counted lines, repeats above half, verdict True": 10,
        "21 counted lines, repeats one short of half, verdict False": 10,
        "21 counted lines, repeats above half, verdict True": 10,
        "line rule would fire, < 2000 units, verdict False": 10,
        "line rule would fire, >= 2000 units, verdict True": 100,
        "total length 1990..2010": 100, "has a line of 23 units once trimmed": 100,
        "has a line of 24 units once trimmed": 100, "has a line of 25 units once trimmed": 100,
        "has a 23..25-unit line with surrogates": 100, "Python strip differs from JS trim": 100,
    }
    thin = {name: buckets[name] for name, least in must.items() if buckets[name] < least}
    assert not thin, f"the generator no longer reaches these cases often enough: {thin}"


def test_enough_cases_compared(
    oracle: Oracle, reference: Batch, record_property: Callable[[str, object], None],
    case_counts: dict[str, tuple[float, float]],
) -> None:
    for name, batch in reference.cases.items():
        assert len(batch) >= 1000, name
    record_property("mastra_install_seconds", round(oracle.install_seconds, 1))
    record_property("mastra_oracle_seconds", round(reference.seconds, 2))
    case_counts["_timings"] = (round(oracle.install_seconds, 1), round(reference.seconds, 2))


def test_a_long_period_loop_is_caught_as_in_1_31(oracle: Oracle) -> None:
    """A 21-line block repeated whole, which 1.10's window sampler misses, is degenerate for 1.31 and for
    ``detect_degenerate(text, "v1.31")`` and both parsers run with that strategy."""
    block = [f"* 🔴 (10:{minute:02d}) User asked about item number {minute * 7919}" for minute in range(21)]
    text = "\n".join(block * 3)
    assert utf16_len(text) >= 2000
    assert not is_degenerate(text)
    assert detect_degenerate(text, "v1.31")
    (answer,) = oracle.run([("parseObserverOutput", [text])])
    assert answer["ok"] == _degenerate_flag(text) == _reflector_flag(text) == {"degenerate": True}


def test_hint_cases_tell_the_two_readings_apart(reference: Batch) -> None:
    """Most generated replies read differently under 1.10's rules, so the comparison above can fail; Mastra's
    answers take values from the JSON block and from a later section over an earlier one."""
    cases, answers = reference.cases["parseObserverOutputWithHints"], reference.answers["parseObserverOutputWithHints"]
    differ, from_json, last_wins = 0, 0, 0
    for (text,), answer in zip(cases, answers, strict=True):
        old = parse_observer_output(text, degenerate_strategy="v1.31")
        got = answer["ok"]
        differ += (got["observations"], got["currentTask"], got["suggestedResponse"]) != (
            old.observations, old.current_task, old.suggested_response)
        from_json += got["currentTask"] == "from json"
        last_wins += got["currentTask"] == "Secondary: pack" and "Primary: plan the trip" in text.split("Secondary")[0]
    assert differ > len(cases) // 2
    assert from_json > 10 and last_wins > 0
