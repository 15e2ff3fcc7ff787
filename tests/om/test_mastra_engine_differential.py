"""Engine differential: om-eval's ObservationalMemory against the real ``@mastra/memory`` engine, pair by pair.

Why: the text helpers match 1.10 case for case (``test_mastra_differential.py``), but the engine decides *when*
the Observer and Reflector run, *which* messages each call gets, what the record then holds and what the actor
is finally shown. ``scripts/mastra_engine_replay.mjs`` drives the package's ``ObservationalMemory`` processor
through generated conversations, one user/assistant pair per two-step agent turn, with deterministic stand-in
models; :mod:`tests.om.engine_replay` replays the same conversations through om-eval with the same stand-ins;
this module compares them field by field and prints how many pairs (or conversations) agree on each field.

Marker ``mastra``; skipped, saying why, without node/npm or the registry. ``scripts/mastra_engine_differential.sh``
runs it alone and prints the counts.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.npm_oracle import NodeFolder, differential_size, node_folder
from tests.om.engine_replay import Setting, observer_reply, reflector_reply, replay
from tests.om.test_mastra_differential import PACKAGES

pytestmark = pytest.mark.mastra

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "mastra_engine_replay.mjs"
#: The packages as 1.10.0 resolved them when it was published: a fresh install today takes tokenx 1.6.0 (the
#: range is ^1.3.0), which counts a 🔴 as two tokens where 1.3.0 counts one, so observation token counts differ.
ENGINE_PACKAGES = {**PACKAGES, "tokenx": "1.3.0"}
#: 1.31.0 loads only with @mastra/core 1.71.0 (1.59, 1.62 and 1.66 fail at import); it bundles tokenx 1.3.0.
ENGINE_PACKAGES_1_31 = {"@mastra/memory": "1.31.0", "@mastra/core": "1.71.0", "tokenx": "1.3.0"}
#: 200 under ``OM_EVAL_DIFFERENTIAL=full`` (:func:`tests.npm_oracle.differential_size`).
CONVERSATIONS = differential_size(200)
SEED = 20261124

#: The cells the suite runs: small thresholds so that every mechanism fires many times per conversation.
SETTINGS = {
    "thread-sync": Setting("thread", False, message_tokens=400, observation_tokens=300, sessions=(1, 3),
                           pairs=(4, 16)),
    "resource-sync": Setting("resource", False, message_tokens=900, observation_tokens=700,
                             max_tokens_per_batch=700, pending_accounting="mastra_step", sessions=(4, 9),
                             obscure_thread_ids=True),
    "thread-buffered": Setting("thread", True, message_tokens=400, observation_tokens=300, sessions=(1, 3),
                               pairs=(4, 16), buffer_candidates="after_cursor", activation_counts_reminder=True),
    "thread-buffered-om-eval": Setting("thread", True, message_tokens=400, observation_tokens=300, sessions=(1, 3),
                                       pairs=(4, 16)),
    # The same cells against 1.31.0, with om-eval's engine set as om=v1_31 sets it.
    "1.31 thread-sync": Setting("thread", False, message_tokens=400, observation_tokens=300, sessions=(1, 3),
                                pairs=(4, 16), mastra_release="v1_31"),
    "1.31 resource-sync": Setting("resource", False, message_tokens=900, observation_tokens=700,
                                  max_tokens_per_batch=700, pending_accounting="mastra_step", sessions=(4, 9),
                                  obscure_thread_ids=True, mastra_release="v1_31"),
    "1.31 thread-buffered": Setting("thread", True, message_tokens=400, observation_tokens=300, sessions=(1, 3),
                                    pairs=(4, 16), mastra_release="v1_31"),
}

# --------------------------------------------------------------------------- comparing


def _calls(pair: dict[str, Any], kind: str) -> list[list[str]]:
    return sorted(c["tags"] for c in pair["calls"] if c["kind"] == kind)


FIELDS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "trigger points (calls per pair)": lambda p: Counter(c["kind"] for c in p["calls"]),
    "observer batches (messages per call)": lambda p: _calls(p, "observer"),
    "reflector inputs": lambda p: _calls(p, "reflector"),
    "generation": lambda p: p["record"]["generation"],
    "observations text": lambda p: p["record"]["observations"],
    "observation tokens": lambda p: p["record"]["observationTokens"],
    "buffered chunks": lambda p: p["record"]["chunks"],
    "buffered reflection": lambda p: p["record"]["bufferedReflection"],
}


def mastra_actor_messages(result: dict[str, Any]) -> list[dict[str, str]]:
    """What the actor receives from Mastra, as om-eval lists it (the question itself left out)."""
    actor = result["actor"]
    return [{"role": "system", "content": s} for s in actor["system"]] + [
        {"role": m["role"], "content": m["text"]} for m in actor["messages"] if m["id"] != "question"
    ]


def without_prose(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The actor's messages with the fixed instruction texts replaced by their names.

    Those texts are in our own words on purpose (the golden files pin ours); everything else (which messages,
    in which order and role, the observations, the other conversations, the raw tail) must be identical.
    """
    out = []
    for index, message in enumerate(messages):
        content = message["content"]
        if index == 0 and message["role"] == "system":
            content = "<preamble and instructions>"
        elif "START_OTHER_CONVERSATIONS_BLOCK" in content:
            content = "<other conversations intro>" + content[content.index("START_OTHER_CONVERSATIONS_BLOCK"):]
        elif message["role"] == "user" and content.startswith("<system-reminder>"):
            content = "<continuation reminder>"
        out.append({"role": message["role"], "content": content})
    return out


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> NodeFolder:
    return node_folder(tmp_path_factory, "mastra-engine-oracle", ENGINE_PACKAGES)


@pytest.fixture(scope="module")
def oracle_1_31(tmp_path_factory: pytest.TempPathFactory) -> NodeFolder:
    return node_folder(tmp_path_factory, "mastra-engine-oracle-1.31", ENGINE_PACKAGES_1_31)


def run_cell(oracle: NodeFolder, setting: Setting, count: int, seed: int = SEED) -> dict[str, Any]:
    conversations = [setting.conversation(seed + i) for i in range(count)]
    theirs = oracle.run(SCRIPT.read_text(encoding="utf-8"),
                        {"config": setting.node_config(), "conversations": conversations},
                        name="om_eval_engine_replay.mjs")
    ours = [asyncio.run(replay(c, setting)) for c in conversations]
    return {"conversations": conversations, "theirs": theirs, "ours": ours}


def tally(cell: dict[str, Any]) -> tuple[dict[str, list[int]], list[str]]:
    """Per field: [identical, compared]; and the first differences, described."""
    counts: dict[str, list[int]] = {name: [0, 0] for name in [*FIELDS, "actor messages"]}
    examples: list[str] = []
    for conv, theirs, ours in zip(cell["conversations"], cell["theirs"], cell["ours"]):
        assert "error" not in theirs, theirs.get("error")
        for index, (a, b) in enumerate(zip(theirs["pairs"], ours["pairs"])):
            for name, read in FIELDS.items():
                same = read(a) == read(b)
                counts[name][0] += same
                counts[name][1] += 1
                if not same and len(examples) < 6:
                    examples.append(f"{conv['resource']} pair {index} {name}: mastra={read(a)!r:.400} "
                                    f"om-eval={read(b)!r:.400}")
        mastra, om_eval = without_prose(mastra_actor_messages(theirs)), without_prose(ours["actor"]["messages"])
        same = mastra == om_eval
        counts["actor messages"][0] += same
        counts["actor messages"][1] += 1
        if not same and len(examples) < 8:
            examples.append(f"{conv['resource']} actor: mastra={json.dumps(mastra, ensure_ascii=False)[:1500]} "
                            f"om-eval={json.dumps(om_eval, ensure_ascii=False)[:1500]}")
    return counts, examples


def activity(results: list[dict[str, Any]]) -> dict[str, int]:
    """How often each mechanism ran in one side's replays (so a cell that never reflects is visible)."""
    totals = Counter()
    for result in results:
        previous_chunks, previous_generation = 0, 0
        for pair in result["pairs"]:
            record = pair["record"]
            for call in pair["calls"]:
                totals[f"{call['kind']} calls"] += 1
            chunks = len(record["chunks"])
            totals["chunks stored"] += max(0, chunks - previous_chunks) if chunks >= previous_chunks else 0
            totals["activations"] += chunks < previous_chunks
            totals["reflections"] += record["generation"] > previous_generation
            previous_chunks, previous_generation = chunks, record["generation"]
        totals["conversations"] += 1
        totals["pairs"] += len(result["pairs"])
    return dict(totals)


def report(name: str, counts: dict[str, list[int]], cell: dict[str, Any] | None = None) -> str:
    version = (ENGINE_PACKAGES_1_31 if SETTINGS[name].mastra_release == "v1_31" else ENGINE_PACKAGES)["@mastra/memory"]
    lines = [f"engine differential, {name} (@mastra/memory {version}):"]
    if cell is not None:
        lines.append("  mastra ran: " + ", ".join(f"{v} {k}" for k, v in activity(cell["theirs"]).items()))
    lines += [f"  {field:40s} {same:5d} / {total:5d} identical" for field, (same, total) in counts.items()]
    return "\n".join(lines)


# --------------------------------------------------------------------------- tests


def test_the_stand_ins_follow_one_rule_in_both_languages(oracle: NodeFolder) -> None:
    texts = [
        "## New messages\n«m1|May 1, 2023|09:00» apple river stone\n«m2|May 2, 2023|10:05» cloud",
        ('<thread id="ab12">\n«m3|Jun 3, 2024|23:59» ember quartz willow saffron tundra beacon walnut\n</thread>\n'
         '<thread id="cd34">\n«m4|Jun 4, 2024|00:00»\n«m3|Jun 3, 2024|23:59» again\n</thread>'),
        "no tags at all",
        "Date: May 1, 2023\n* fact m1: x\n* fact m2: y\n* fact m3\n* fact m4\n* fact m5 fact m1",
    ]
    script = ('const { observerReply, reflectorReply } = await import("./om_eval_engine_replay_rules.mjs");'
              'let s = ""; for await (const c of process.stdin) s += c;'
              'process.stdout.write(JSON.stringify(JSON.parse(s).map((t) => [observerReply(t), reflectorReply(t)])));')
    rules = SCRIPT.read_text(encoding="utf-8").split("// ------------------------------------------------------"
                                                     "---------------------- the replay")[0]
    rules = rules.replace("let input = \"\";\nfor await (const chunk of process.stdin) input += chunk;\n"
                          "const { config, conversations } = JSON.parse(input);\n", "")
    (oracle.folder / "om_eval_engine_replay_rules.mjs").write_text(rules, encoding="utf-8")
    theirs = oracle.run(script, texts, name="om_eval_engine_rules_check.mjs")
    assert theirs == [[observer_reply(t), reflector_reply(t)] for t in texts]


KNOWN_DIFFERENCES = {
    "thread-buffered-om-eval": "om-eval's default buffer candidates (every message no chunk covers) re-buffer the "
                               "messages whose chunks a reflection generation dropped; 1.10 never observes them",
}


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN_DIFFERENCES[n], strict=True)) if n in KNOWN_DIFFERENCES
    else n for n in SETTINGS
])
def test_engine_matches_mastra(name: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]) -> None:
    newer = SETTINGS[name].mastra_release == "v1_31"
    oracle = request.getfixturevalue("oracle_1_31" if newer else "oracle")
    cell = run_cell(oracle, SETTINGS[name], CONVERSATIONS)
    counts, examples = tally(cell)
    with capsys.disabled():
        print("\n" + report(name, counts, cell))
    assert all(same == total for same, total in counts.values()), "\n".join(examples)
