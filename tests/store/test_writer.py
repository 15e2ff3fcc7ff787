"""One run file and its single writer: schema, run registration, atomic question records, snapshots, locking."""

from __future__ import annotations

import json
import multiprocessing
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from om_eval.llm.ledger import CallRecord
from om_eval.om.outcomes import OMEvent
from om_eval.store import ConfigMismatchError, RunStore, StoreBusyError, StoreError, store_path
from om_eval.store.schema import SCHEMA_VERSION, TABLES
from tests.store import workers
from tests.store.workers import question, run_info

SPAWN = multiprocessing.get_context("spawn")


@pytest.fixture
def store(tmp_path: Path):
    with RunStore(store_path(tmp_path, "r1")) as store:
        store.register_run(run_info("r1"))
        yield store


def rows(store: RunStore, sql: str, params: list | None = None) -> list[tuple]:
    return store._read(sql, params or [])


def counts(store: RunStore, question_id: str) -> tuple[int, int, int]:
    return (
        rows(store, "SELECT count(*) FROM items WHERE question_id = ?", [question_id])[0][0],
        rows(store, "SELECT count(*) FROM om_events WHERE question_id = ?", [question_id])[0][0],
        rows(store, "SELECT count(*) FROM llm_calls WHERE question_id = ?", [question_id])[0][0],
    )


# -- schema ----------------------------------------------------------------------------------------------------


def test_a_new_file_has_every_table_and_the_schema_version(tmp_path: Path) -> None:
    path = store_path(tmp_path, "abc")
    assert path == tmp_path / "store" / "abc.duckdb"
    with RunStore(path) as store:
        tables = {r[0] for r in rows(store, "SELECT table_name FROM duckdb_tables()")}
        assert tables == set(TABLES)
        assert rows(store, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    assert (tmp_path / "store" / "abc.duckdb.lock").exists()


def test_reopening_keeps_the_data_and_the_schema(tmp_path: Path) -> None:
    path = store_path(tmp_path, "r1")
    with RunStore(path) as store:
        store.register_run(run_info("r1"))
        store.record_question("r1", *question("r1", 1))
    with RunStore(path) as store:
        assert store.done_question_ids("r1") == {"q0001"}
        assert rows(store, "SELECT count(*) FROM meta WHERE key = 'schema_version'") == [(1,)]


def test_a_file_from_before_a_column_existed_gains_it(tmp_path: Path) -> None:
    path = store_path(tmp_path, "old")
    path.parent.mkdir(parents=True)
    con = duckdb.connect(str(path))
    con.execute(TABLES["items"].replace("actor_prompt_hash VARCHAR,", ""))
    con.execute("INSERT INTO items (run_id, question_id, status) VALUES ('old', 'q1', 'done')")
    con.close()
    with RunStore(path) as store:
        assert rows(store, "SELECT question_id, actor_prompt_hash FROM items") == [("q1", None)]


def test_a_calls_table_from_before_the_prompt_cache_count_gains_it(tmp_path: Path) -> None:
    path = store_path(tmp_path, "old")
    path.parent.mkdir(parents=True)
    con = duckdb.connect(str(path))
    con.execute(TABLES["llm_calls"].replace("cached_prompt_tokens INTEGER,", ""))
    con.execute("INSERT INTO llm_calls (run_id, question_id, seq, stage) VALUES ('old', 'q1', 0, 'actor')")
    con.close()
    with RunStore(path) as store:
        store.register_run(run_info("old"))
        item, events, _, _ = question("old", 2, n_calls=1)
        call = CallRecord(stage="actor", model="openai/m", prompt_tokens=50, completion_tokens=5, cached=False,
                          latency_s=0.1, retries=0, cost_usd=0.0, cached_prompt_tokens=40)
        store.record_question("old", item, events, [call])
        assert rows(store, "SELECT question_id, cached_prompt_tokens FROM llm_calls ORDER BY question_id") == [
            ("q0002", 40), ("q1", None)]


def test_a_file_from_a_newer_om_eval_is_refused(tmp_path: Path) -> None:
    path = store_path(tmp_path, "new")
    with RunStore(path) as store:
        store._read("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION + 1)])
    with pytest.raises(StoreError, match="schema version"):
        RunStore(path)
    with RunStore(store_path(tmp_path, "other")):  # the failed open released its lock and file
        pass


# -- runs ------------------------------------------------------------------------------------------------------


def test_registering_again_keeps_created_at_and_logs_each_invocation(tmp_path: Path) -> None:
    path = store_path(tmp_path, "r1")
    with RunStore(path) as store:
        store.register_run(run_info("r1"))
    with RunStore(path) as store:
        # resume on a newer commit with another concurrency (outside the config hash): allowed and recorded
        store.register_run(run_info("r1", git_sha="b" * 40, git_dirty=True,
                                    config_json={"om": {"observation": {"message_tokens": 30000}}, "prompt": "r1",
                                                 "run": {"concurrency": 16}}))
        (run,) = [dict(zip(("created_at", "updated_at", "git_sha", "registrations"), r)) for r in rows(
            store, "SELECT created_at, updated_at, git_sha, registrations FROM runs")]
    history = json.loads(run["registrations"])
    assert [h["git_sha"] for h in history] == ["a" * 40, "b" * 40]
    assert run["git_sha"] == "b" * 40 and run["created_at"] < run["updated_at"]


def test_a_changed_configuration_is_refused_with_the_difference(store: RunStore) -> None:
    changed = run_info("r1", config_json={"om": {"observation": {"message_tokens": 10000}}, "prompt": "r1"})
    with pytest.raises(ConfigMismatchError, match=r"om\.observation\.message_tokens: 30000 -> 10000"):
        store.register_run(changed)
    with pytest.raises(ConfigMismatchError, match="dataset_sha256"):
        store.register_run(run_info("r1", dataset_sha256="e" * 64))
    assert rows(store, "SELECT count(*) FROM runs") == [(1,)]


def test_settings_the_run_id_leaves_out_may_differ_on_a_second_registration(tmp_path: Path) -> None:
    first = {"prompt": "r9", "models": {"actor": {"model": "openai/x", "provider_options": {}}}}
    again = {**first, "experiment": "quickstart", "judge": {"panel": ["house", "lenient"]},
             "models": {"actor": {"model": "openai/x", "provider_options": {"price": "free",
                                                                            "request": {"timeout_s": 30}}}}}
    changed = {**again, "models": {"actor": {"model": "openai/y", "provider_options": {}}}}
    with RunStore(store_path(tmp_path, "r9")) as store:
        store.register_run(run_info("r9", config_json=first))
        store.register_run(run_info("r9", config_json=again))  # a preset's name, a price, limits, a panel: same run
        with pytest.raises(ConfigMismatchError, match=r"models\.actor\.model: \"openai/x\" -> \"openai/y\""):
            store.register_run(run_info("r9", config_json=changed))


def test_a_run_file_holds_one_run(store: RunStore) -> None:
    with pytest.raises(StoreError, match="already holds run r1"):
        store.register_run(run_info("r2"))


def test_questions_of_an_unregistered_run_are_refused(store: RunStore) -> None:
    with pytest.raises(StoreError, match="register_run"):
        store.record_question("nope", *question("nope", 1))


def test_unknown_item_keys_and_statuses_are_refused(store: RunStore) -> None:
    item, events, calls, _ = question("r1", 1)
    with pytest.raises(ValueError, match="hypothesys"):
        store.record_question("r1", {**item, "hypothesys": "typo"}, events, calls)
    with pytest.raises(ValueError, match="status"):
        store.record_question("r1", {**item, "status": "finished"}, events, calls)
    assert counts(store, "q0001") == (0, 0, 0)


# -- questions -------------------------------------------------------------------------------------------------


def test_a_question_is_recorded_with_its_events_calls_and_snapshot(store: RunStore) -> None:
    event = OMEvent(kind="reflection", at=datetime(2026, 1, 1, 12, tzinfo=UTC), record_id="res",
                    generation=2, thread_ids=("a", "b", "c"), level=1, levels=(0, 1), calls=2)
    call = CallRecord(stage="observer", model="scripted/om-eval", prompt_tokens=None, completion_tokens=3,
                      cached=True, latency_s=0.0, retries=0, cost_usd=None, saved_usd=0.5)
    item, _, _, snapshot = question("r1", 1)
    store.record_question("r1", item, [event], [call], snapshot)
    assert rows(store, 'SELECT kind, "at", thread_count, level, levels, record_id, seq FROM om_events') == [
        ("reflection", datetime(2026, 1, 1, 12), 3, 1, "[0, 1]", "res", 0)]
    assert rows(store, "SELECT stage, prompt_tokens, cached, cost_usd, saved_usd FROM llm_calls") == [
        ("observer", None, True, None, 0.5)]
    assert rows(store, "SELECT status, label, finished_at IS NOT NULL FROM items") == [("done", False, True)]
    assert store.get("mem-r1", "q0001") == {"snapshot": snapshot[2], "stats": snapshot[3]}


def test_record_question_is_all_or_nothing(store: RunStore) -> None:
    item, events, calls, snapshot = question("r1", 1)
    store.record_question("r1", item, events, calls, snapshot)
    before = counts(store, "q0001")
    bad_call = {**calls[0], "prompt_tokens": "not a number"}  # fails inside the transaction, at insert time
    for qid in ("q0001", "q0002"):  # a replacement and a first attempt
        item2, events2, calls2, snapshot2 = question("r1", int(qid[1:]))
        with pytest.raises(duckdb.Error):
            store.record_question("r1", {**item2, "hypothesis": "new"}, events2, [*calls2, bad_call],
                                  (snapshot2[0], snapshot2[1], {"new": True}, {}))
    assert counts(store, "q0001") == before == (1, 3, 4)  # the failed replacement deleted nothing
    assert rows(store, "SELECT hypothesis FROM items WHERE question_id = 'q0001'") == [("answer 1",)]
    assert counts(store, "q0002") == (0, 0, 0)
    assert store.get("mem-r1", "q0002") is None and store.get("mem-r1", "q0001")["snapshot"] != {"new": True}
    store.record_question("r1", *question("r1", 2))  # the store is still usable
    assert store.done_question_ids("r1") == {"q0001", "q0002"}


def test_a_rerun_replaces_the_item_and_events_but_keeps_paid_calls(store: RunStore) -> None:
    item, events, calls, _ = question("r1", 1, n_events=3, n_calls=5, status="error")
    store.record_question("r1", {**item, "error": "judge timed out"}, events, calls)
    assert store.done_question_ids("r1") == set()
    item, events, calls, _ = question("r1", 1, n_events=1, n_calls=2)
    store.record_question("r1", item, events, calls)
    assert counts(store, "q0001") == (1, 1, 7)  # the failed attempt's 5 calls were paid for: they stay
    assert [r[0] for r in rows(store, "SELECT seq FROM llm_calls ORDER BY seq")] == list(range(7))
    assert [(r["question_id"], r["status"], r["error"]) for r in store.items("r1")] == [("q0001", "done", None)]
    assert store.done_question_ids("r1") == {"q0001"}


def test_a_rerun_after_reopening_still_replaces_and_numbers_calls_after_the_paid_ones(tmp_path: Path) -> None:
    # The writer skips the clean-up of questions it knows have no rows yet; what it knows must come from the
    # file, or a resumed run would collide with (or duplicate) an earlier invocation's rows.
    verdict = {"judge_identity": json.dumps({"mode": "house"}), "label": False, "status": "ok"}
    with RunStore(store_path(tmp_path, "r1")) as first:
        first.register_run(run_info("r1"))
        item, events, calls, _ = question("r1", 1, n_calls=3, status="error")
        first.record_question("r1", item, events, calls, judgments=[verdict])
    with RunStore(store_path(tmp_path, "r1")) as second:
        second.register_run(run_info("r1"))
        item, events, calls, _ = question("r1", 1, n_calls=2)
        second.record_question("r1", item, events, calls, judgments=[{**verdict, "label": True}])
        assert counts(second, "q0001") == (1, 3, 5)
        assert [r[0] for r in rows(second, "SELECT seq FROM llm_calls ORDER BY seq")] == list(range(5))
        assert rows(second, "SELECT label FROM judgments WHERE question_id = 'q0001'") == [(True,)]


def test_answering_from_a_reused_memory_keeps_the_builds_events(store: RunStore) -> None:
    item, events, calls, _ = question("r1", 1)
    store.record_question("r1", item, events, calls)
    store.record_question("r1", {**item, "reused_memory": True}, [], calls[:1])
    assert counts(store, "q0001")[:2] == (1, 3)
    store.record_question("r1", {**item, "status": "error", "reused_memory": None}, [], [])
    assert counts(store, "q0001")[:2] == (1, 3)  # a failed attempt brings no events and erases none


# -- snapshots -------------------------------------------------------------------------------------------------


def test_snapshot_put_and_get_round_trip(store: RunStore) -> None:
    assert store.get("k", "q") is None
    data = {"snapshot": {"observations": "Läuft 🏃", "records": [1, 2.5, None]},
            "stats": {"observer_calls": 3, "compression_ratio": 4.25, "reflection_errors": []}}
    store.put("k", "q", data)
    assert store.get("k", "q") == data
    store.put("k", "q", {"snapshot": {"v": 2}, "stats": {}})
    assert store.get("k", "q") == {"snapshot": {"v": 2}, "stats": {}}
    assert rows(store, "SELECT count(*) FROM memory_snapshots") == [(1,)]


def test_a_snapshot_is_stored_compressed(store: RunStore) -> None:
    data = {"snapshot": {"messages": ["the same long line of a haystack"] * 200}, "stats": {"turns": None}}
    store.put("k", "q", data)
    [(text, packed)] = rows(store, "SELECT snapshot, snapshot_zlib FROM memory_snapshots")
    assert text is None and len(packed) * 10 < len(json.dumps(data["snapshot"]))
    assert store.get("k", "q") == data


def schema_2_file(path: Path, snapshot: dict) -> None:
    """A run file as om-eval wrote it before snapshots were compressed, holding one text snapshot."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    for name, ddl in TABLES.items():
        con.execute(ddl.replace("snapshot_zlib BLOB,", "") if name == "memory_snapshots" else ddl)
    con.execute("INSERT INTO meta VALUES ('schema_version', '2')")
    con.execute("INSERT INTO memory_snapshots (memory_key, question_id, snapshot, stats) VALUES ('k', 'q', ?, '{}')",
                [json.dumps(snapshot)])
    con.close()


def test_a_text_snapshot_of_schema_2_is_read_and_a_replacement_drops_its_text(tmp_path: Path) -> None:
    path = store_path(tmp_path, "old")
    schema_2_file(path, {"v": 1})
    with RunStore(path) as store:
        assert store.get("k", "q") == {"snapshot": {"v": 1}, "stats": {}}
        assert rows(store, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
        store.put("k", "q", {"snapshot": {"v": 2}, "stats": {}})
        assert rows(store, "SELECT snapshot FROM memory_snapshots") == [(None,)]
        assert store.get("k", "q") == {"snapshot": {"v": 2}, "stats": {}}


class RecordingModel:
    """The scripted model, keeping a ledger record per call (like ``LLMClient``, without litellm)."""

    def __init__(self) -> None:
        from om_eval.testing.scripted.model import ScriptedModel

        self.model = ScriptedModel()
        self.records: list[CallRecord] = []

    async def complete(self, messages, *, stage, settings):
        reply = await self.model.complete(messages, stage=stage, settings=settings)
        self.records.append(CallRecord(stage=stage, model=reply.model, prompt_tokens=reply.prompt_tokens,
                                       completion_tokens=reply.completion_tokens, cached=False, latency_s=0.0,
                                       retries=0, cost_usd=0.0))
        return reply


def test_a_memory_kept_in_the_run_store_is_restored_without_a_model_call(tmp_path: Path) -> None:
    import asyncio
    import json

    from om_eval.data import load_dataset, mini_fixture_path
    from om_eval.memory.services import HarnessServices
    from om_eval.memory.view import history_view
    from om_eval.om import ModelSettings, ObservationConfig, OMConfig, ReflectionConfig
    from om_eval.systems.om.system import ObservationalMemorySystem

    scripted = ModelSettings(model="scripted/om-eval", temperature=0, max_output_tokens=None)
    config = OMConfig(scope="resource", observation=ObservationConfig(message_tokens=100, model=scripted),
                      reflection=ReflectionConfig(observation_tokens=5000, model=scripted))
    system = ObservationalMemorySystem({"config": config})
    question_ = load_dataset(path=mini_fixture_path()).questions[0]
    with RunStore(store_path(tmp_path, "r1")) as store:
        store.register_run(run_info("r1"))
        observer = RecordingModel()
        build = asyncio.run(system.ingest(history_view(question_), HarnessServices(observer, None, system.counter)))
        events = system.build_events(build)
        assert observer.records and events
        key = f"{system.pinned_identity().memory_key}-x"
        item = {"question_id": question_.question_id, "memory_key": key, "reused_memory": False}
        snapshot = (key, question_.memory_owner, json.dumps(system.snapshot(build)), None)
        store.record_question("r1", item, events, observer.records, snapshot)
        assert counts(store, question_.question_id) == (1, len(events), len(observer.records))
        again = RecordingModel()
        kept = store.get(key, question_.memory_owner)
        assert kept is not None
        rebuilt = asyncio.run(system.restore(kept["snapshot"], HarnessServices(again, None, system.counter)))
        assert not again.records and rebuilt.memory.snapshot() == build.memory.snapshot()


# -- one writer ------------------------------------------------------------------------------------------------


def test_a_second_writer_process_is_refused(tmp_path: Path) -> None:
    path = store_path(tmp_path, "r1")
    results = SPAWN.Queue()
    with RunStore(path):
        child = SPAWN.Process(target=workers.try_open, args=(str(path), results))
        child.start()
        outcome, message = results.get(timeout=60)
        child.join(30)
        assert outcome == "busy"
        assert str(path) in message and "same configuration" in message
        with pytest.raises(StoreBusyError):  # a second writer in the same process is refused too
            RunStore(path)
    child = SPAWN.Process(target=workers.try_open, args=(str(path), results))
    child.start()
    assert results.get(timeout=60)[0] == "opened"
    child.join(30)


def test_a_reader_holding_the_file_delays_the_writer(tmp_path: Path) -> None:
    path = store_path(tmp_path, "r1")
    with RunStore(path) as store:
        store.register_run(run_info("r1"))
    ready = SPAWN.Event()
    reader = SPAWN.Process(target=workers.hold_reader, args=(str(path), ready, 1.5))
    reader.start()
    assert ready.wait(60)
    with pytest.raises(StoreBusyError, match="held open by another process"):
        RunStore(path, open_timeout=0.2)
    with RunStore(path, open_timeout=20) as store:  # waits until the reader lets go
        assert store.done_question_ids("r1") == set()
    reader.join(30)
