"""Streamed datasets (S and M): the same questions and errors as held ones, bounded memory in a run, M-sized files."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import weakref
from pathlib import Path
from typing import Any

import pytest

from om_eval.cli.data import add_parser as add_data_parser
from om_eval.cli.data import run as run_data_command
from om_eval.data import Dataset, load_dataset, mini_fixture_path, select
from om_eval.data.loader import DatasetValidationError, iter_records
from om_eval.data.synth import generate, iter_generate, write_dataset


def _same(a: Dataset, b: Dataset) -> None:
    assert (a.name, a.path, a.sha256, a.subset, len(a)) == (b.name, b.path, b.sha256, b.subset, len(b))
    assert a.entries == b.entries
    assert list(a.iter_questions()) == list(b.iter_questions())


def test_streamed_and_held_loads_give_the_same_questions(tmp_path: Path) -> None:
    held, streamed = load_dataset(mini_fixture_path()), load_dataset(mini_fixture_path(), stream=True)
    assert not held.streamed and streamed.streamed
    _same(held, streamed)
    path = write_dataset(generate(size="small", questions_per_type=2, abstention=2, seed=3), tmp_path / "small.json")
    held, streamed = load_dataset(path, stream=False), load_dataset(path, stream=True)
    _same(held, streamed)
    assert streamed.questions == held.questions and streamed.by_id() == held.by_id()
    # Subsets keep streaming and read only their questions, in file order; done ids are skipped.
    chosen = select(streamed, types="ku", abstention=False)
    assert chosen.streamed and chosen.subset == "types=knowledge-update;abstention=none"
    _same(select(held, types="ku", abstention=False), chosen)
    first, second = [e.question_id for e in chosen.entries]
    assert [q.question_id for q in chosen.iter_questions(skip={first})] == [second]
    assert [q.raw for q in streamed.iter_questions()] == [{}] * len(streamed)  # raw records only when asked
    records = [q.raw for q in load_dataset(path, stream=True, keep_raw=True).iter_questions()]
    assert records == json.loads(path.read_text())


def test_large_files_are_streamed_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from om_eval.data import loader

    monkeypatch.setattr(loader, "STREAM_MIN_BYTES", 1_000)
    assert load_dataset(mini_fixture_path()).streamed
    monkeypatch.setattr(loader, "STREAM_MIN_BYTES", 1 << 40)
    assert not load_dataset(mini_fixture_path()).streamed


@pytest.mark.parametrize("stream", [False, True])
def test_bad_records_give_the_same_errors_streamed(tmp_path: Path, stream: bool) -> None:
    records = generate(size="mini", questions_per_type=1, seed=0)
    records[3]["haystack_dates"][1] = "2023-05-30"
    path = write_dataset(records, tmp_path / "bad.json")
    with pytest.raises(DatasetValidationError) as caught:
        load_dataset(path, stream=stream)
    qid = records[3]["question_id"]
    assert str(caught.value).startswith(f"bad.json: question {qid!r} field haystack_dates[1]: '2023-05-30' is not")
    del records[3]["question_id"]
    write_dataset(records, path)
    with pytest.raises(DatasetValidationError, match=r"^bad\.json: record 3 field question_id: is missing"):
        load_dataset(path, stream=stream)


def test_a_truncated_file_names_the_file_and_where_it_stops(tmp_path: Path) -> None:
    path = write_dataset(generate(size="small", questions_per_type=1, seed=1), tmp_path / "cut.json")
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * 0.6)])
    with pytest.raises(DatasetValidationError,
                       match=r"^cut\.json: is not valid JSON \(parse error: premature EOF\) after \d complete "
                             r"record\(s\): the file looks truncated"):
        load_dataset(path, stream=True)
    with pytest.raises(DatasetValidationError, match=r"^cut\.json: is not valid JSON"):
        list(iter_records(path))


def test_a_file_changed_after_loading_is_refused_when_read_again(tmp_path: Path) -> None:
    path = write_dataset(generate(size="mini", seed=0), tmp_path / "moving.json")
    dataset = load_dataset(path, stream=True)
    write_dataset(generate(size="mini", seed=1), path)
    os.utime(path, ns=(1, 1))
    with pytest.raises(DatasetValidationError, match=r"^moving\.json: changed on disk since it was loaded"):
        next(dataset.iter_questions())


def test_a_run_holds_at_most_concurrency_questions(tmp_path: Path) -> None:
    from om_eval.experiment.job import RunJob
    from tests.experiment.test_budget import spec_for

    path = write_dataset(generate(size="mini", questions_per_type=1, abstention=3, seed=5), tmp_path / "many.json")
    base = load_dataset(path, stream=True)
    alive: set[int] = set()
    materialised = 0

    def counting(entries: Any) -> Any:
        nonlocal materialised
        for question in base.restrict(entries, None).iter_questions():
            materialised += 1
            alive.add(id(question))
            weakref.finalize(question, alive.discard, id(question))
            yield question

    dataset = Dataset(base.name, base.path, base.sha256, entries=base.entries, stream=counting)
    concurrency, peaks = 3, []

    class Watched(RunJob):
        async def _one(self, question: Any, *args: Any) -> None:
            gc.collect()
            peaks.append(len(alive))
            await asyncio.sleep(0.01)  # let the other workers take their questions
            await super()._one(question, *args)

    job = Watched(spec_for(tmp_path, "experiment=smoke", f"run.concurrency={concurrency}"))
    progress = asyncio.run(job.run(dataset=dataset))
    assert progress.done == len(dataset) == materialised == 9
    assert max(peaks) == concurrency  # never the whole file: only the questions in flight
    again = asyncio.run(Watched(job.spec).run(dataset=dataset))
    assert again.skipped_done == 9 and materialised == 9  # done questions are not even built


def test_synth_m_writes_a_valid_m_sized_file_one_record_at_a_time(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="om-eval")
    add_data_parser(parser.add_subparsers(dest="command"))
    out = tmp_path / "m.json"
    argv = ["data", "synth", "--size", "m", "--questions-per-type", "0", "--abstention", "1", "--out", str(out)]
    assert run_data_command(parser.parse_args(argv)) == 0
    assert "Wrote 1 questions (0 answerable, 1 abstention; size m, seed 0)" in capsys.readouterr().out
    (question,) = load_dataset(out, stream=True).iter_questions()
    assert 490 <= len(question.sessions) <= 510
    chars = sum(len(t.content) for s in question.sessions for t in s.turns)
    assert 6_500_000 <= chars <= 8_000_000  # ~1.5M o200k tokens at 4.93 characters each
    assert not (tmp_path / "m.json.partial").exists()
    # The writer takes an iterator and never needs it whole; the bytes match a list written at once.
    lazy = write_dataset(iter_generate(size="mini", seed=2), tmp_path / "lazy.json")
    assert lazy.read_bytes() == write_dataset(generate(size="mini", seed=2), tmp_path / "list.json").read_bytes()
