"""Case 5: damaged cache files between runs. A damaged entry is a miss (asked again, then stored afresh), never
a crash and never a reply; the run ends with the reference results.

Each case copies the cache of one clean run, damages one entry per stage (seeded choice), and runs the same
configuration into an empty results folder, so every answer has to come from the damaged cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from om_eval.cli import main
from om_eval.llm.cache import ResponseCache
from tests.reliability.harness import (
    Outcome,
    assert_consistent,
    assert_matches,
    cache_entries,
    invoke,
    outcome,
    read,
)

STAGES = ("observer", "actor", "judge")


@pytest.fixture(scope="module")
def primed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache filled by one clean smoke run."""
    folder = tmp_path_factory.mktemp("primed")
    assert invoke(folder).code == 0
    return folder / "cache"


def stage_of(path: Path) -> str:
    return json.loads(path.read_bytes().partition(b"\n")[2])["request"]["stage"]


def victims(cache: Path, seed: int) -> dict[str, Path]:
    """One entry per stage, chosen with ``seed``."""
    rng = random.Random(seed)
    by_stage: dict[str, list[Path]] = {}
    for path in sorted(cache_entries(cache.parent).values()):
        by_stage.setdefault(stage_of(path), []).append(path)
    return {path.stem: path for path in (rng.choice(by_stage[stage]) for stage in STAGES)}


def with_checksum(body: bytes) -> bytes:
    return b"om-eval-cache/1 " + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def damage(path: Path, how: str, rng: random.Random, others: list[Path]) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        path.write_bytes(rng.randbytes(len(data)))
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "bit-flip":
        at = data.index(b"\n") + 1 + rng.randrange(len(data) - data.index(b"\n") - 1)
        path.write_bytes(data[:at] + bytes([data[at] ^ 0x20]) + data[at + 1 :])
    elif how == "another-entry":  # intact and checksummed, but filed under the wrong key
        path.write_bytes(next(p for p in others if p != path).read_bytes())
    elif how == "wrong-shape":  # checksummed JSON that is not a response
        path.write_bytes(with_checksum(json.dumps({"key": path.stem, "response": {"text": 42}}).encode()))
    elif how == "directory":  # unreadable as a file, and cannot be replaced either
        path.unlink()
        path.mkdir()
    else:
        raise ValueError(how)


DAMAGE = ("truncated", "garbage", "empty", "bit-flip", "another-entry", "wrong-shape", "directory")


@pytest.mark.parametrize("how", DAMAGE)
def test_a_damaged_entry_is_a_miss_and_the_run_ends_as_the_reference(
    tmp_path: Path, primed: Path, reference: Callable[..., Outcome], how: str
) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(primed, cache)
    rng = random.Random(f"cache-{how}")
    chosen = victims(cache, rng.randrange(1000))
    entries = sorted(cache_entries(tmp_path).values())
    for path in chosen.values():
        damage(path, how, rng, entries)

    done = invoke(tmp_path)
    assert done.code == 0 and "0 errors" in done.flat, done.output[-2000:]
    assert_consistent(tmp_path)
    assert_matches(outcome(tmp_path), reference())
    with read(tmp_path) as db:
        asked = {r["cache_key"] for r in db.query("SELECT cache_key FROM llm_calls WHERE NOT cached")}
        served = db.query("SELECT count(*) AS n FROM llm_calls WHERE cached")[0]["n"]
    assert asked == set(chosen), "exactly the damaged entries should be asked for again"
    assert served == len(entries) - len(chosen)
    if how != "directory":  # the fresh answer replaced the damaged file
        assert all(ResponseCache(cache).contains(key) for key in chosen)


def test_debris_in_the_cache_folder_is_ignored(tmp_path: Path, primed: Path, reference: Callable[..., Outcome]) -> None:
    # Temporary files of killed writers, torn counter files and a torn epoch next to intact entries.
    cache = tmp_path / "cache"
    shutil.copytree(primed, cache)
    for index, path in enumerate(sorted(cache_entries(tmp_path).values())[:3]):
        (path.parent / f".{path.name}.host.1.{index:08x}.tmp").write_bytes(path.read_bytes()[:40])
    (cache / "stats").mkdir(exist_ok=True)
    (cache / "stats" / "torn-counter.json").write_text('{"epoch": "0", "hits": 3, "mis')
    (cache / "stats" / "wrong-types.json").write_text('{"epoch": "0", "hits": "many", "misses": null}')
    (cache / "stats" / "epoch").write_bytes(b"\xff\xfe")

    done = invoke(tmp_path)
    assert done.code == 0, done.output[-2000:]
    assert_matches(outcome(tmp_path), reference())
    with read(tmp_path) as db:
        assert db.query("SELECT bool_and(cached) AS all_cached FROM llm_calls")[0]["all_cached"]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["cache", "stats", "--json", "--dir", str(cache)]) == 0
    assert json.loads(printed.getvalue())["entries"] == len(cache_entries(tmp_path))


def test_a_damaged_epoch_file_never_breaks_a_lookup(tmp_path: Path, primed: Path) -> None:
    # Regression: the counters' epoch file was decoded strictly, so a damaged one raised UnicodeDecodeError from
    # every lookup that flushed the counters (every few seconds of a run) and from `om-eval cache stats`.
    cache = tmp_path / "cache"
    shutil.copytree(primed, cache)
    (cache / "stats").mkdir(exist_ok=True)
    (cache / "stats" / "epoch").write_bytes(b"\xff\xfe\x00")
    reader = ResponseCache(cache, flush_every=1)
    for key in cache_entries(tmp_path):
        assert reader.get(key) is not None
    assert reader.stats().hits == len(cache_entries(tmp_path))
