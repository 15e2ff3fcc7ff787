"""The catalog over all run files, and snapshot lookup across runs, including files another process is writing."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import duckdb
import pytest

from om_eval.store import Catalog, RunStore, SnapshotLookup, store_path
from om_eval.store.schema import TABLES
from tests.store import workers
from tests.store.workers import question, run_info

SPAWN = multiprocessing.get_context("spawn")


def write(results: Path, run_id: str, n: int) -> Path:
    workers.write_run(str(results), run_id, n, 2, 3)
    return store_path(results, run_id)


@pytest.fixture
def live_writer(tmp_path: Path):
    """A process writing run ``live`` (three questions and a snapshot committed), until the test ends."""
    ready, release = SPAWN.Event(), SPAWN.Event()
    child = SPAWN.Process(target=workers.hold_writer, args=(str(tmp_path), "live", ready, release))
    child.start()
    assert ready.wait(60)
    try:
        yield child, release
    finally:
        release.set()
        child.join(30)


def test_an_empty_results_folder_gives_empty_views(tmp_path: Path) -> None:
    with Catalog(tmp_path / "nothing-here") as catalog:
        assert catalog.runs() == [] and catalog.items() == [] and catalog.skipped_files == []
        frame = catalog.frame("SELECT * FROM items")
        assert frame.empty and {"run_id", "question_id", "label", "store_file"} <= set(frame.columns)
        assert catalog.query('SELECT count(*) AS n, max("at") AS at FROM om_events') == [{"n": 0, "at": None}]


def test_views_union_every_run_file(tmp_path: Path) -> None:
    write(tmp_path, "a", 3)
    write(tmp_path, "b", 2)
    with Catalog(tmp_path) as catalog:
        assert [r["run_id"] for r in catalog.runs()] == ["a", "b"]
        assert [(r["run_id"], r["question_id"]) for r in catalog.items(["b"])] == [("b", "q0000"), ("b", "q0001")]
        assert len(catalog.items()) == 5
        assert catalog.query("SELECT store_file, count(*) AS n FROM llm_calls GROUP BY ALL ORDER BY 1") == [
            {"store_file": "a.duckdb", "n": 9}, {"store_file": "b.duckdb", "n": 6}]
        assert catalog.query("SELECT count(*) AS n FROM items WHERE run_id = ?", ["a"]) == [{"n": 3}]
        frame = catalog.frame("SELECT run_id, avg(label::INT) AS accuracy FROM items GROUP BY ALL ORDER BY 1")
        assert list(frame["run_id"]) == ["a", "b"]


def test_a_file_without_newer_columns_reads_null_there(tmp_path: Path) -> None:
    write(tmp_path, "new", 1)
    old = store_path(tmp_path, "old")
    con = duckdb.connect(str(old))
    for name, ddl in TABLES.items():
        con.execute(ddl.replace("actor_prompt_hash VARCHAR,", "") if name == "items" else ddl)
    con.execute("INSERT INTO items (run_id, question_id, status) VALUES ('old', 'q1', 'done')")
    con.close()
    with Catalog(tmp_path) as catalog:
        assert [(r["run_id"], r["actor_prompt_hash"]) for r in catalog.items()] == [("new", None), ("old", None)]


def test_the_snapshot_column_is_json_text_whichever_schema_stored_it(tmp_path: Path) -> None:
    from tests.store.test_writer import schema_2_file

    with RunStore(store_path(tmp_path, "new")) as store:
        store.put("k", "new", {"snapshot": {"v": "Läuft 🏃"}, "stats": {}})
    schema_2_file(store_path(tmp_path, "old"), {"v": "text"})
    with Catalog(tmp_path) as catalog:
        rows = catalog.query("SELECT question_id, snapshot->>'v' AS v FROM memory_snapshots ORDER BY 1")
        assert rows == [{"question_id": "new", "v": "Läuft 🏃"}, {"question_id": "q", "v": "text"}]
        assert "snapshot_zlib" not in catalog.frame("SELECT * FROM memory_snapshots").columns


def test_a_snapshot_is_found_in_a_file_of_schema_2_no_writer_has_opened(tmp_path: Path) -> None:
    from tests.store.test_writer import schema_2_file

    schema_2_file(store_path(tmp_path, "old"), {"v": 1})
    with RunStore(store_path(tmp_path, "new")) as writer:
        assert SnapshotLookup(tmp_path, writer).get("k", "q") == {"snapshot": {"v": 1}, "stats": {}}


def test_the_catalog_reads_a_file_being_written_from_a_copy(tmp_path: Path, live_writer) -> None:
    write(tmp_path, "finished", 2)
    with pytest.warns(RuntimeWarning, match=r"being written.*live\.duckdb"):
        catalog = Catalog(tmp_path)
    with catalog:
        assert catalog.live_files == [store_path(tmp_path, "live")] and catalog.skipped_files == []
        assert sorted(r["run_id"] for r in catalog.runs()) == ["finished", "live"]
        assert len(catalog.items(["live"])) == 3  # every question the writer committed
        copies = catalog._copies
    assert copies is not None and not copies.exists(), "closing the catalog deletes its copies"
    _, release = live_writer
    release.set()
    live_writer[0].join(30)
    with Catalog(tmp_path) as catalog:
        assert catalog.live_files == [] and sorted(r["run_id"] for r in catalog.runs()) == ["finished", "live"]


def test_a_file_that_cannot_be_read_even_as_a_copy_is_skipped_with_the_reason(tmp_path: Path) -> None:
    write(tmp_path, "finished", 1)
    store_path(tmp_path, "damaged").write_bytes(b"not a database")
    with pytest.warns(RuntimeWarning, match=r"damaged\.duckdb"):
        catalog = Catalog(tmp_path)
    with catalog:
        assert catalog.skipped_files == [store_path(tmp_path, "damaged")]
        assert [r["run_id"] for r in catalog.runs()] == ["finished"]


def test_snapshot_lookup_reads_other_runs_and_skips_files_being_written(tmp_path: Path, live_writer) -> None:
    builder = write(tmp_path, "builder", 2)  # built memory mem-builder for q0000 and q0001
    with RunStore(store_path(tmp_path, "answer-only")) as writer:
        writer.register_run(run_info("answer-only", memory_key="mem-builder"))
        lookup = SnapshotLookup(tmp_path, writer)
        found = lookup.get("mem-builder", "q0001")
        assert found == {"snapshot": question("builder", 1)[3][2], "stats": {"history_tokens": 1}}
        assert lookup.found_in[("mem-builder", "q0001")] == builder
        assert lookup.get("mem-builder", "q9999") is None
        with RunStore(builder, open_timeout=0):  # the lookup closed the file it read
            pass

        assert lookup.get("shared-memory", "q0000") is None  # only in the live writer's file: skipped
        _, release = live_writer
        release.set()
        live_writer[0].join(30)
        assert lookup.get("shared-memory", "q0000") == {"snapshot": {"from": "live"}, "stats": {"observer_calls": 7}}

        lookup.put("mem-answer", "q0000", {"snapshot": {"own": 1}, "stats": {}})
        assert writer.get("mem-answer", "q0000") == {"snapshot": {"own": 1}, "stats": {}}
        assert lookup.get("mem-answer", "q0000") == {"snapshot": {"own": 1}, "stats": {}}


def test_a_snapshot_row_without_a_snapshot_in_another_file_is_skipped(tmp_path: Path) -> None:
    from tests.store.test_writer import schema_2_file

    schema_2_file(store_path(tmp_path, "old"), {"v": 1})
    con = duckdb.connect(str(store_path(tmp_path, "old")))
    con.execute("UPDATE memory_snapshots SET snapshot = NULL")
    con.close()
    with RunStore(store_path(tmp_path, "new")) as writer:
        assert SnapshotLookup(tmp_path, writer).get("k", "q") is None


def test_a_damaged_compressed_snapshot_in_another_file_is_skipped(tmp_path: Path) -> None:
    with RunStore(store_path(tmp_path, "damaged")) as store:
        store.put("k", "q", {"snapshot": {"v": 1}, "stats": {}})
        store._read("UPDATE memory_snapshots SET snapshot_zlib = 'not zlib'::BLOB", [])
    with RunStore(store_path(tmp_path, "new")) as writer:
        assert SnapshotLookup(tmp_path, writer).get("k", "q") is None
