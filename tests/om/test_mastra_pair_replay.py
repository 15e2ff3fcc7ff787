"""What the released @mastra/memory 1.10.0 does when a haystack is fed the way Mastra's harness feeds it.

``scripts/mastra_pair_replay.mjs`` drives the real ``ObservationalMemory`` through ``agent.generate`` once per
user/assistant pair (resource scope, a text-only mock actor, a small threshold) and reports the Observer calls and
the record's pending tokens after each pair. Finding, pinned here: **the released package never observes in this
replay**. Its synchronous observation runs only at agent steps after the first, and a text-only reply ends the
call at step 0, so pending tokens grow far past the threshold with no Observer call. om-eval's
``pending_accounting`` readings all observe; ``mastra_step`` is what 1.x would count if it checked after each pair,
not what it does. Marker ``mastra``; skipped, saying why, without node/npm or the registry.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.npm_oracle import node_folder
from tests.om.test_mastra_differential import PACKAGES

pytestmark = pytest.mark.mastra

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "mastra_pair_replay.mjs"
TOPICS = ["bees on the roof", "rye bread", "a trip to Lisbon", "the beagle Toby", "a new bicycle", "piano lessons"]


def sessions(seed: int, count: int = 3, pairs: int = 4) -> list[list[list[str]]]:
    rng = random.Random(seed)
    return [[[f"Session {s}, turn {p}: I keep thinking about {rng.choice(TOPICS)} and {rng.choice(TOPICS)}.",
              f"Noted, {rng.choice(TOPICS)} it is; tell me more about {rng.choice(TOPICS)}."]
             for p in range(pairs)] for s in range(count)]


def test_the_released_package_never_observes_in_a_per_pair_replay(tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = node_folder(tmp_path_factory, "mastra-oracle", PACKAGES)
    threshold = 100
    report = folder.run(SCRIPT.read_text(encoding="utf-8"), {"sessions": sessions(7), "messageTokens": threshold},
                        name="om_eval_pair_replay.mjs")
    assert len(report) == 12
    assert all(step["observerCalls"] == 0 for step in report)
    assert report[-1]["pendingMessageTokens"] > 3 * threshold, report[-1]  # far past any reading's threshold
    assert all(step["observationTokens"] == 0 for step in report)
