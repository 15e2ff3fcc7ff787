"""Loading LongMemEval files: resolution, sha256, validation messages, normalisation and subsets (offline)."""

from __future__ import annotations

import copy
import hashlib
import json
import socket
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from om_eval.data import loader
from om_eval.data.loader import (
    EXPECTED_COUNTS,
    LME_FILES,
    LME_REPO,
    LME_REVISION,
    DatasetIntegrityError,
    DatasetNotFoundError,
    DatasetValidationError,
    check_counts,
    dataset_from_records,
    hub_url,
    load_dataset,
    select,
)
from om_eval.data.records import QUESTION_TYPES
from om_eval.data.synth import generate


def _record(qid: str = "e47becba", **overrides: Any) -> dict[str, Any]:
    record = {
        "question_id": qid,
        "question_type": "knowledge-update",
        "question": "Which city do I live in now?",
        "answer": "Austin",
        "question_date": "2023/05/30 (Tue) 21:56",
        "haystack_session_ids": ["sharegpt_Qx1Yz2A_0", "answer_fx0a1b2c_1", "sharegpt_Qx1Yz2A_0",
                                 "answer_fx0a1b2c_2"],
        "haystack_dates": ["2023/05/02 (Tue) 08:14", "2023/05/05 (Fri) 19:40", "2023/05/12 (Fri) 11:03",
                           "2023/05/28 (Sun) 16:22"],
        "haystack_sessions": [
            [{"role": "user", "content": "How do I descale a kettle?"},
             {"role": "assistant", "content": "Use diluted vinegar."}],
            [{"role": "user", "content": "I just moved to Denver.", "has_answer": True},
             {"role": "assistant", "content": "Welcome to Denver!", "has_answer": False}],
            [{"role": "user", "content": "How do I descale a kettle?"},
             {"role": "assistant", "content": "Use diluted vinegar."}],
            [{"role": "user", "content": "I relocated to Austin last week.", "has_answer": True},
             {"role": "assistant", "content": "Hope the move went well.", "has_answer": False}],
        ],
        "answer_session_ids": ["answer_fx0a1b2c_1", "answer_fx0a1b2c_2"],
    }
    record.update(overrides)
    return record


def _write(folder: Path, records: Any, name: str = "bad.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(records))
    return path


@pytest.fixture()
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LONGMEMEVAL_DIR", raising=False)


# ------------------------------------------------------------------------------------------- normalisation


def test_a_valid_record_is_normalised_and_the_raw_record_kept_when_asked(tmp_path: Path) -> None:
    records = [_record(), _record("gpt4_0a1b2c3d_abs", answer=3, question_type="multi-session")]
    path = _write(tmp_path, records, "mine.json")
    assert load_dataset(path).questions[0].raw == {}  # raw records are kept only where asked
    dataset = load_dataset(path, keep_raw=True)
    assert dataset.name == "mine" and dataset.path == str(path) and dataset.subset is None
    assert dataset.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()  # hashed and recorded, not checked
    first, second = dataset.questions
    assert first.raw == records[0] and first.answer_text == "Austin" and not first.is_abstention
    assert first.question_date.isoformat() == "2023-05-30T21:56:00"
    assert [s.is_evidence for s in first.sessions] == [False, True, False, True]
    assert first.sessions[1].turns[0].has_answer is True and first.sessions[0].turns[0].has_answer is None
    assert second.answer == 3 and isinstance(second.answer, int) and second.answer_text == "3"
    assert second.is_abstention and second.question_type == "multi-session"


def test_repeated_session_ids_keep_distinct_question_index_keys(tmp_path: Path) -> None:
    question = load_dataset(_write(tmp_path, [_record()], "dup.json")).questions[0]
    repeated = [s for s in question.sessions if s.session_id == "sharegpt_Qx1Yz2A_0"]
    assert [s.key for s in repeated] == [("e47becba", 0), ("e47becba", 2)]
    assert repeated[0].date != repeated[1].date and repeated[0].turns == repeated[1].turns
    assert len({s.key for s in question.sessions}) == len(question.sessions) == 4


def test_json_lines_are_accepted_as_a_fallback(tmp_path: Path) -> None:
    path = tmp_path / "lines.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (_record("aaaa0001"), _record("aaaa0002"))) + "\n")
    assert [q.question_id for q in load_dataset(path).questions] == ["aaaa0001", "aaaa0002"]
    path.write_text(json.dumps(_record()) + "\n{not json\n")
    with pytest.raises(DatasetValidationError, match=r"lines\.jsonl: line 2 is not valid JSON"):
        load_dataset(path)


# ---------------------------------------------------------------------------------------------- validation


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def change(record: dict[str, Any]) -> None:
        target: Any = record
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


def _delete(path: tuple[Any, ...]) -> Any:
    def change(record: dict[str, Any]) -> None:
        target: Any = record
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return change


BAD_RECORDS = [
    (_delete(("question_type",)), "question_type", "is missing"),
    (_set(("question_type",), "single-session"), "question_type", "'single-session' is not one of the 6 types"),
    (_set(("question",), None), "question", "must be a string"),
    (_set(("answer",), 3.5), "answer", "must be a string or an integer"),
    (_set(("answer",), True), "answer", "must be a string or an integer"),
    (_set(("question_date",), "2023-05-30"), "question_date", "'2023-05-30' is not in the format"),
    (_set(("haystack_dates", 3), "2023-05-30"), r"haystack_dates\[3\]", "'2023-05-30' is not in the format"),
    (_set(("haystack_dates", 0), "2023/02/30 (Thu) 10:00"), r"haystack_dates\[0\]",
     r"'2023/02/30 \(Thu\) 10:00' is not a valid date"),
    (_set(("haystack_session_ids", 0), 17), r"haystack_session_ids\[0\]", "must be a string"),
    (_set(("haystack_sessions",), {}), "haystack_sessions", "must be a list"),
    (_delete(("haystack_dates", 3)), "haystack_dates", "has 3 entries but haystack_session_ids has 4"),
    (_delete(("haystack_sessions", 0)), "haystack_sessions", "has 3 entries but haystack_session_ids has 4"),
    (_set(("answer_session_ids", 1), "answer_ffffffff_9"), r"answer_session_ids\[1\]",
     "'answer_ffffffff_9' is not among haystack_session_ids"),
    (_set(("haystack_sessions", 1, 1, "role"), "system"), r"haystack_sessions\[1\]\[1\]\.role",
     "'system' is not 'user' or 'assistant'"),
    (_set(("haystack_sessions", 0, 0, "content"), 5), r"haystack_sessions\[0\]\[0\]\.content", "must be a string"),
    (_delete(("haystack_sessions", 0, 0, "content")), r"haystack_sessions\[0\]\[0\]\.content", "is missing"),
    (_set(("haystack_sessions", 3, 0, "has_answer"), "yes"), r"haystack_sessions\[3\]\[0\]\.has_answer",
     "must be true or false"),
    (_set(("haystack_sessions", 2, 0), "hello"), r"haystack_sessions\[2\]\[0\]", "must be an object"),
]


def _no_haystack(record: dict[str, Any]) -> None:
    for name in ("haystack_session_ids", "haystack_dates", "haystack_sessions", "answer_session_ids"):
        record[name] = []


def _hollow_sessions(turns: list[Any]) -> Any:
    def change(record: dict[str, Any]) -> None:
        record["haystack_sessions"] = [copy.deepcopy(turns) for _ in record["haystack_sessions"]]
    return change


#: Records that parse but give the engine nothing to work with.
EMPTY_RECORDS = [
    (_set(("question",), ""), "question", "is empty: there is nothing to ask"),
    (_set(("question",), " \n\t"), "question", "is empty: there is nothing to ask"),
    (_no_haystack, "haystack_sessions", "is empty: the question has no haystack"),
    (_hollow_sessions([]), "haystack_sessions", r"holds 4 session\(s\) but not one turn with text"),
    (_hollow_sessions([{"role": "user", "content": " "}, {"role": "assistant", "content": ""}]),
     "haystack_sessions", r"holds 4 session\(s\) but not one turn with text"),
]


@pytest.mark.parametrize(("change", "field", "problem"), BAD_RECORDS)
def test_validation_names_the_file_question_and_field(tmp_path: Path, change: Any, field: str,
                                                      problem: str) -> None:
    record = _record()
    change(record)
    path = _write(tmp_path, [_record("00000001"), record])
    with pytest.raises(DatasetValidationError, match=rf"^bad\.json: question 'e47becba' field {field}: {problem}"):
        load_dataset(path)


@pytest.mark.parametrize(("change", "field", "problem"), EMPTY_RECORDS)
def test_empty_questions_and_haystacks_are_refused_with_a_remedy(tmp_path: Path, change: Any, field: str,
                                                                  problem: str) -> None:
    record = _record()
    change(record)
    with pytest.raises(DatasetValidationError, match=rf"^bad\.json: question 'e47becba' field {field}: {problem}") \
            as caught:
        load_dataset(_write(tmp_path, [_record("00000001"), record]))
    assert "drop this record" in str(caught.value)  # says what to do
    assert (caught.value.question_id, caught.value.field) == ("e47becba", field)


def test_some_empty_sessions_are_fine(tmp_path: Path) -> None:
    record = _record()
    record["haystack_sessions"][0] = []
    assert load_dataset(_write(tmp_path, [record])).questions[0].sessions[0].turns == ()


@pytest.mark.parametrize("text", ["[]", " [ ]\n", "", "\n\n"])
def test_a_file_without_questions_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "empty.json"
    path.write_text(text)
    with pytest.raises(DatasetValidationError, match=r"^empty\.json: holds no questions .*at least one record"):
        load_dataset(path)


def test_the_date_error_reads_as_documented(tmp_path: Path) -> None:
    record = _record()
    record["haystack_dates"][3] = "2023-05-30"
    with pytest.raises(DatasetValidationError) as caught:
        load_dataset(_write(tmp_path, [record], "longmemeval_s_mine.json"))
    assert str(caught.value) == ("longmemeval_s_mine.json: question 'e47becba' field haystack_dates[3]: '2023-05-30' "
                                 "is not in the format 'YYYY/MM/DD (Day) HH:MM', e.g. '2023/05/30 (Tue) 23:40'")
    assert (caught.value.question_id, caught.value.field) == ("e47becba", "haystack_dates[3]")


def test_records_without_an_id_are_located_by_index_and_repeats_are_refused(tmp_path: Path) -> None:
    no_id = _record()
    del no_id["question_id"]
    with pytest.raises(DatasetValidationError, match=r"bad\.json: record 1 field question_id: is missing"):
        load_dataset(_write(tmp_path, [_record("00000001"), no_id]))
    with pytest.raises(DatasetValidationError, match=r"bad\.json: record 0: must be a JSON object"):
        load_dataset(_write(tmp_path, [["not", "an", "object"]]))
    with pytest.raises(DatasetValidationError, match=r"question 'e47becba' field question_id: is repeated"):
        load_dataset(_write(tmp_path, [_record(), _record()]))
    with pytest.raises(DatasetValidationError, match=r"bad\.json: must hold a JSON array of records \(or JSON lines\), "
                                                     r"got an object with keys \['examples'\]"):
        load_dataset(_write(tmp_path, {"examples": []}))
    with pytest.raises(DatasetValidationError, match=r"bad\.json: is not valid JSON"):
        (tmp_path / "bad.json").write_text('[{"question_id": ')
        load_dataset(tmp_path / "bad.json")


def _counted_records() -> list[dict[str, Any]]:
    records = []
    for qtype, (total, abstention) in EXPECTED_COUNTS.items():
        for i in range(total):
            qid = f"{QUESTION_TYPES.index(qtype)}{i:07d}" + ("_abs" if i < abstention else "")
            records.append(_record(qid, question_type=qtype))
    return records


def test_per_type_counts_of_full_files() -> None:
    records = _counted_records()
    check_counts(dataset_from_records(records, name="s").questions, source="longmemeval_s_cleaned.json")
    with pytest.raises(DatasetValidationError, match="has 499 questions, expected 500"):
        check_counts(dataset_from_records(records[1:], name="s").questions, source="longmemeval_s_cleaned.json")
    records[0]["question_type"] = "multi-session"  # an SSU abstention relabelled: the total stays 500
    with pytest.raises(DatasetValidationError,
                       match=r"field question_type: 69 'single-session-user' questions \(5 abstention\), "
                             r"expected 70 \(6 abstention\)"):
        check_counts(dataset_from_records(records, name="s").questions, source="longmemeval_s_cleaned.json")


# ------------------------------------------------------------------------------------- sha256 and sources


def test_a_known_file_name_with_another_sha256_is_refused(tmp_path: Path, no_env: None) -> None:
    path = _write(tmp_path, [_record()], "longmemeval_oracle.json")
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(DatasetIntegrityError) as caught:
        load_dataset(path)
    message = str(caught.value)
    assert message.startswith("longmemeval_oracle.json: sha256 mismatch")
    assert f"expected {LME_FILES['oracle'].sha256}" in message and f"actual {actual}" in message
    with pytest.raises(DatasetIntegrityError):  # naming the split applies its pin to any file name
        load_dataset("oracle", path=_write(tmp_path, [_record()], "copy.json"))
    dataset = load_dataset(path, verify=False)  # explicit opt-out: loads, count check skipped too
    assert dataset.name == "oracle" and dataset.sha256 == actual and len(dataset) == 1


def test_the_env_folder_and_data_dir_are_searched_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_dir, own_dir = tmp_path / "env", tmp_path / "own"
    env_dir.mkdir()
    own_dir.mkdir()
    env_file = _write(env_dir, [_record("0000000e")], "longmemeval_s_cleaned.json")
    own_file = _write(own_dir, [_record("0000000d")], "longmemeval_s_cleaned.json")
    monkeypatch.setenv("LONGMEMEVAL_DIR", str(env_dir))
    assert load_dataset("s", verify=False).path == str(env_file)
    assert load_dataset("s", data_dir=own_dir, verify=False).path == str(own_file)
    with pytest.raises(DatasetIntegrityError, match="longmemeval_s_cleaned.json: sha256 mismatch"):
        load_dataset("s")


def test_missing_explicit_paths_and_unknown_splits_are_clear(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match="nowhere.json' does not exist"):
        load_dataset(tmp_path / "nowhere.json")
    with pytest.raises(ValueError, match="split 'x' is unknown"):
        load_dataset("x", path=tmp_path / "nowhere.json")
    with pytest.raises(ValueError, match="give a split"):
        load_dataset()


@pytest.fixture()
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    attempts: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise OSError("network use in an offline test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return attempts


def test_offline_hub_error_names_the_file_and_both_remedies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: list[Any],
) -> None:
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("LONGMEMEVAL_DIR", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))  # an empty hub cache
    with pytest.raises(DatasetNotFoundError) as caught:
        load_dataset("s", data_dir=tmp_path)
    message = str(caught.value)
    assert "'longmemeval_s_cleaned.json' (split 's') is missing" in message
    assert f"data_dir: {tmp_path / 'longmemeval_s_cleaned.json'} does not exist" in message
    assert "$LONGMEMEVAL_DIR is not set" in message
    assert "HF_HUB_OFFLINE=1 and the file is not in the local hub cache" in message
    assert hub_url("longmemeval_s_cleaned.json") in message and "set LONGMEMEVAL_DIR=" in message
    assert "unset HF_HUB_OFFLINE" in message
    assert no_network == []
    assert isinstance(caught.value, FileNotFoundError)


def test_the_hub_is_asked_for_the_pinned_revision(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  no_env: None) -> None:
    import huggingface_hub

    served = _write(tmp_path, [_record()], "longmemeval_oracle.json")
    calls: list[dict[str, Any]] = []

    def fake_download(**kwargs: Any) -> str:
        calls.append(kwargs)
        return str(served)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DatasetIntegrityError):
        load_dataset("oracle")
    assert calls == [{"repo_id": LME_REPO, "filename": "longmemeval_oracle.json", "repo_type": "dataset",
                      "revision": LME_REVISION, "local_files_only": True}]
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(loader, "_hub_reachable", lambda: True)  # as on a machine with network
    dataset = load_dataset("oracle", verify=False)
    assert calls[-1]["local_files_only"] is False and dataset.name == "oracle" and dataset.path == str(served)
    # No network at all (the hub takes no connection): the local hub cache only, without the client's retries.
    monkeypatch.setattr(loader, "_hub_reachable", lambda: False)
    load_dataset("oracle", verify=False)
    assert calls[-1]["local_files_only"] is True
    load_dataset("oracle", revision="main")  # another revision: the pinned hash does not apply
    assert calls[-1]["revision"] == "main"


# ------------------------------------------------------------------------------------------------- subsets


@pytest.fixture(scope="module")
def dataset() -> Any:
    return dataset_from_records(generate(size="mini", questions_per_type=4, abstention=4, seed=3), name="synthetic")


def test_select_by_ids_keeps_file_order_and_names_unknown_ids(dataset: Any) -> None:
    ids = [q.question_id for q in dataset.questions]
    chosen = select(dataset, ids=[ids[5], ids[1]])
    assert [q.question_id for q in chosen.questions] == [ids[1], ids[5]]
    assert chosen.subset == "ids=" + ",".join(sorted([ids[1], ids[5]]))
    assert (chosen.name, chosen.sha256, chosen.path) == (dataset.name, dataset.sha256, dataset.path)
    with pytest.raises(ValueError, match=r"2 question id\(s\) not in dataset 'synthetic': 'nope1', 'nope2'"):
        select(dataset, ids=[ids[0], "nope1", "nope2"])
    many = select(dataset, ids=ids)
    assert len(many) == len(ids) and many.subset.startswith(f"ids={len(ids)}@sha256:")
    assert select(dataset, ids=list(reversed(ids))).subset == many.subset


def test_select_by_types_first_and_abstention(dataset: Any) -> None:
    chosen = select(dataset, types=["tr", "multi-session"])
    assert {q.question_type for q in chosen.questions} == {"multi-session", "temporal-reasoning"}
    assert chosen.subset == "types=multi-session,temporal-reasoning"
    assert [q.question_id for q in select(dataset, first=3).questions] == [q.question_id for q in dataset.questions[:3]]
    assert select(dataset, first=3).subset == "first=3"
    only_abs = select(dataset, abstention=True)
    assert len(only_abs) == 4 and all(q.is_abstention for q in only_abs.questions)
    assert only_abs.subset == "abstention=only"
    with pytest.raises(ValueError, match="question type 'chitchat' is unknown"):
        select(dataset, types="chitchat")
    with pytest.raises(ValueError, match="at most one of first, sample and per_type"):
        select(dataset, first=2, sample=2)
    with pytest.raises(ValueError, match="first=-1 is invalid"):
        select(dataset, first=-1)
    assert select(dataset) is dataset


def test_seeded_samples_are_deterministic_and_independent_of_file_order(dataset: Any) -> None:
    a = select(dataset, sample=6, seed=1)
    assert len(a) == 6 and a.subset == "sample=6;seed=1"
    assert [q.question_id for q in select(dataset, sample=6, seed=1).questions] == [q.question_id for q in a.questions]
    assert {q.question_id for q in select(dataset, sample=6, seed=2).questions} != {q.question_id for q in a.questions}
    raw = dataset_from_records(generate(size="mini", questions_per_type=4, abstention=4, seed=3), name="x",
                               keep_raw=True)
    assert [q.question_id for q in raw.questions] == [q.question_id for q in dataset.questions]
    shuffled = dataset_from_records([q.raw for q in reversed(raw.questions)], name="synthetic")
    assert {q.question_id for q in select(shuffled, sample=6, seed=1).questions} == {
        q.question_id for q in a.questions}


def test_stratified_per_type_sample(dataset: Any) -> None:
    chosen = select(dataset, per_type=2, seed=0)
    assert Counter(q.question_type for q in chosen.questions) == {t: 2 for t in QUESTION_TYPES}
    assert chosen.subset == "per_type=2;seed=0"
    again = select(dataset, per_type=2, seed=0)
    assert [q.question_id for q in again.questions] == [q.question_id for q in chosen.questions]
    every = select(dataset, per_type=100)
    assert len(every) == len(dataset)  # fewer than N of a type: all of them
    chained = select(select(dataset, types="ku"), per_type=1, seed=4)
    assert len(chained) == 1 and chained.subset == "types=knowledge-update | per_type=1;seed=4"


def test_the_synthetic_mini_record_shape_round_trips(tmp_path: Path) -> None:
    records = generate(size="mini")
    dataset = load_dataset(_write(tmp_path, records, "round.json"), keep_raw=True)
    assert [copy.deepcopy(q.raw) for q in dataset.questions] == records
