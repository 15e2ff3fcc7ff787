"""Case 34.3: an exported archive proves itself before it is re-scored.

The drill changed archives by hand and ``rescore_archive`` scored them all: flipped verdicts, every F1 set to 1,
half the answers dropped, a second empty ``answers.jsonl``. Each of those edits is made here twice, once leaving
``hashes.json`` as exported (the hashes catch it) and once rewriting it to match (the recomputed scores, the run
judge's own verdicts, ``state.json`` and ``metrics.json`` catch it); every one is refused, naming the member.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from om_eval.cli import main
from om_eval.report.export import ArchiveError, archive_bytes, rescore_archive
from tests.locomo_shaped import write_locomo_shaped
from tests.reliability.harness import REPO, invoke, query

Members = dict[str, bytes]


def export(results: Path, *arguments: str) -> Path:
    (run,) = query(results, "SELECT run_id FROM runs")
    assert main(["export", run["run_id"][:8], "--results", str(results), *arguments]) == 0
    return results / "exports" / f"{run['run_id']}.zip"


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("proof")
    done = invoke(results)
    assert done.code == 0, done.output[-3000:]
    return export(results)


@pytest.fixture(scope="module")
def locomo_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("proof-locomo")
    data = write_locomo_shaped(results, conversations=1, sessions=2)
    done = invoke(results, "dataset=locomo", f"dataset.path={data}")
    assert done.code == 0, done.output[-3000:]
    return export(results)


def write_zip(target: Path, members: list[tuple[str, bytes]]) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about a duplicate name, which one case writes on purpose
        with zipfile.ZipFile(target, "w") as out:
            for name, data in members:
                out.writestr(name, data)
    return target


def altered(source: Path, target: Path, change: Callable[[Members], None], *, rehash: bool) -> Path:
    """A copy of ``source`` with ``change`` applied to its members; ``rehash`` rewrites ``hashes.json`` to match."""
    members = archive_bytes(source)
    change(members)
    if rehash:
        hashes = json.loads(members["hashes.json"])
        hashes["files"] = {name: hashlib.sha256(data).hexdigest() for name, data in sorted(members.items())
                           if name != "hashes.json"}
        members["hashes.json"] = json.dumps(hashes).encode()
    return write_zip(target, list(members.items()))


def lines(members: Members, name: str) -> list[dict]:
    return [json.loads(line) for line in members[name].decode().splitlines() if line]


def put(members: Members, name: str, rows: list[dict]) -> None:
    members[name] = "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows).encode()


def flip_verdicts(members: Members) -> None:
    put(members, "answers.jsonl", [{**a, "label": not a["label"]} if a["label"] is not None else a
                                   for a in lines(members, "answers.jsonl")])


def every_score_one(members: Members) -> None:
    put(members, "answers.jsonl", [{**a, "score": 1.0} for a in lines(members, "answers.jsonl")])


def drop_half(members: Members) -> None:
    answers = lines(members, "answers.jsonl")
    put(members, "answers.jsonl", answers[: len(answers) // 2])


def empty_answer(members: Members) -> None:
    members["answers.jsonl"] += b"{}\n"


def better_metrics(members: Members) -> None:
    metrics = json.loads(members["metrics.json"])
    metrics["metrics"]["overall"] = 0.99
    members["metrics.json"] = json.dumps(metrics).encode()


def other_run(members: Members) -> None:
    hashes = json.loads(members["hashes.json"])
    members["hashes.json"] = json.dumps({**hashes, "run_id": "0" * 16}).encode()


def no_calls(members: Members) -> None:
    del members["calls.jsonl"]


def extra_member(members: Members) -> None:
    members["notes.txt"] = b"added later"


#: (edit, what the refusal names when hashes.json is left as exported, when it is rewritten to match).
EDITS = [
    (flip_verdicts, "answers.jsonl does not match its sha256", r"answers.jsonl, question .*: verdict .* differs "
     "from the run judge's"),
    (every_score_one, "answers.jsonl does not match its sha256", r"answers.jsonl, question .*: score 1.0, but "
     "LongMemEval has no score of its own"),
    (drop_half, "answers.jsonl does not match its sha256", r"answers.jsonl holds 3 of 7 questions done.*state.json"),
    (empty_answer, "answers.jsonl does not match its sha256", r"answers.jsonl, answer 8: not an answer"),
    (better_metrics, "metrics.json does not match its sha256", "metrics.json differs from the metrics recomputed"),
    (no_calls, "calls.jsonl is listed in hashes.json but missing", "calls.jsonl is missing"),
    (extra_member, "notes.txt is not one an export writes", "notes.txt is not one an export writes"),
]


def test_an_archive_as_exported_proves_itself_and_re_scores(archive: Path) -> None:
    metrics = rescore_archive(archive)
    assert metrics == json.loads(archive_bytes(archive)["metrics.json"])["metrics"]
    assert "partial" not in metrics


@pytest.mark.parametrize(("edit", "stale", "rehashed"), EDITS, ids=[edit.__name__ for edit, _, _ in EDITS])
def test_an_edited_archive_is_refused_naming_the_member(archive: Path, tmp_path: Path, edit: Callable[[Members], None],
                                                        stale: str, rehashed: str) -> None:
    with pytest.raises(ArchiveError, match=stale):
        rescore_archive(altered(archive, tmp_path / "stale.zip", edit, rehash=False))
    with pytest.raises(ArchiveError, match=rehashed):
        rescore_archive(altered(archive, tmp_path / "rehashed.zip", edit, rehash=True))


def test_hashes_of_another_run_are_refused(archive: Path, tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match="hashes.json gives run_id '0000000000000000', run.json"):
        rescore_archive(altered(archive, tmp_path / "other.zip", other_run, rehash=False))


def test_a_member_stored_twice_is_refused(archive: Path, tmp_path: Path) -> None:
    members = list(archive_bytes(archive).items())
    twice = write_zip(tmp_path / "twice.zip", [*members, ("answers.jsonl", b"{}\n")])
    with pytest.raises(ArchiveError, match="member answers.jsonl appears 2 times"):
        rescore_archive(twice)


def test_a_file_that_is_no_archive_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "junk.zip"
    path.write_bytes(b"not a zip")
    with pytest.raises(ArchiveError, match="junk.zip: not a readable zip archive"):
        rescore_archive(path)


def test_every_f1_set_to_one_is_refused_by_the_recomputed_f1(locomo_archive: Path, tmp_path: Path) -> None:
    metrics = rescore_archive(locomo_archive)
    assert metrics["own"]["name"] == "F1" and metrics["own"]["overall"] < 1.0
    edited = altered(locomo_archive, tmp_path / "f1.zip", every_score_one, rehash=True)
    with pytest.raises(ArchiveError, match=r"answers.jsonl, question locomo_0_qa\d+: score 1.0 differs from F1 "
                                           r"recomputed from its answer and gold \(0\.\d+"):
        rescore_archive(edited)


# -- issue 46 item 4: another run's answers, and a zip bomb -------------------------------------------------------


def test_another_runs_answers_under_this_runs_name_are_refused(archive: Path, tmp_path: Path) -> None:
    other = export(_other_run(tmp_path / "other"))
    theirs = archive_bytes(other)

    def swap(members: Members) -> None:  # every member that carries answers or scores, from the other run
        for name in [n for n in theirs if n not in ("README.md", "hashes.json", "run.json", "config.json")]:
            members[name] = theirs[name]
        for name in [n for n in members if n.startswith("hypotheses.jsonl.eval-results-") and n not in theirs]:
            del members[name]

    forged = altered(archive, tmp_path / "forged.zip", swap, rehash=True)
    run_id = json.loads(archive_bytes(archive)["run.json"])["run_id"]
    with pytest.raises(ArchiveError, match=rf"answers.jsonl, row 1 is of run [0-9a-f]+, not of run {run_id}"):
        rescore_archive(forged)


def _other_run(results: Path) -> Path:
    done = invoke(results, "prompt=legacy")
    assert done.code == 0, done.output[-3000:]
    return results


def test_a_zip_bomb_is_refused_from_its_directory_in_under_a_second(archive: Path, tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    members = archive_bytes(archive)
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as out:  # the fastest to make
        for name, data in members.items():
            if name != "answers.jsonl":
                out.writestr(name, data)
        with out.open("answers.jsonl", "w", force_zip64=True) as member:  # 3 GiB of zeros, a few MB compressed
            zeros = bytes(1 << 24)
            for _ in range(3 * 64):
                member.write(zeros)
    assert bomb.stat().st_size < 20 * 2**20
    # In a fresh process, so that its peak resident size is this call's (this one's is every earlier test's).
    done = subprocess.run([sys.executable, "-c", BOMB_PROBE, str(bomb)], capture_output=True, text=True,
                          timeout=120, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-2000:]
    refused, elapsed, grown = json.loads(done.stdout)
    assert "member answers.jsonl: 3,221,225,472), over the" in refused, refused
    assert elapsed < 1.0 and grown < 100 * 2**20, (elapsed, grown)


#: Re-scores the archive named on the command line; prints the refusal, the seconds and how far the peak resident size
#: grew during the call.
BOMB_PROBE = """
import json, resource, sys, time
from om_eval.report.export import ArchiveError, rescore_archive
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
try:
    rescore_archive(sys.argv[1])
    refused = ""
except ArchiveError as error:
    refused = str(error)
elapsed = time.perf_counter() - started
print(json.dumps([refused, elapsed, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024]))
"""
