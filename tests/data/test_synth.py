"""Synthetic LongMemEval data: exact schema, planted evidence, determinism, the packaged fixture, S-size tokens."""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from om_eval.data.loader import load_dataset
from om_eval.data.records import DATE_PATTERN, QUESTION_TYPES, parse_lme_date
from om_eval.data.synth import (
    SynthQuestion,
    SynthSize,
    generate,
    generate_with_facts,
    mini_fixture_path,
    write_dataset,
)

KEYS = ["question_id", "question_type", "question", "answer", "question_date", "haystack_session_ids",
        "haystack_dates", "haystack_sessions", "answer_session_ids"]
FILLER_ID = re.compile(r"^(sharegpt_[A-Za-z0-9]{7}_\d+|ultrachat_\d+|[0-9a-f]{8}_\d+)$")
EVIDENCE_ID = re.compile(r"^answer_[0-9a-f]{8}_\d+$")
ABS_EVIDENCE_ID = re.compile(r"^answer_[0-9a-f]{8}_abs$")
QID = re.compile(r"^(gpt4_)?[0-9a-f]{8}(_abs)?$")
TOLERANT = re.compile(r"^(\d+) days\. (\d+) days \(including the last day\) is also acceptable\.$")


@pytest.fixture(scope="module")
def mini() -> list[SynthQuestion]:
    return generate_with_facts(size="mini")


@pytest.fixture(scope="module")
def small() -> list[SynthQuestion]:
    return generate_with_facts(size="small", questions_per_type=6, abstention=8, seed=11)


def _sessions(record: dict[str, Any]) -> list[tuple[str, datetime, list[dict[str, Any]]]]:
    return [(sid, parse_lme_date(date), turns) for sid, date, turns in
            zip(record["haystack_session_ids"], record["haystack_dates"], record["haystack_sessions"], strict=True)]


def test_mini_covers_every_type_and_abstention(mini: list[SynthQuestion]) -> None:
    records = [item.record for item in mini]
    answerable = [r for r in records if "_abs" not in r["question_id"]]
    assert sorted(r["question_type"] for r in answerable) == sorted(QUESTION_TYPES)
    abstention = [r for r in records if "_abs" in r["question_id"]]
    assert len(abstention) == 1 and abstention[0]["question_type"] in QUESTION_TYPES
    assert abstention[0]["question_id"].endswith("_abs")
    (abs_session,) = abstention[0]["answer_session_ids"]
    assert ABS_EVIDENCE_ID.match(abs_session) and abs_session in abstention[0]["haystack_session_ids"]
    by_type = {r["question_type"]: r for r in answerable}
    assert isinstance(by_type["multi-session"]["answer"], int)
    assert 2 <= len(by_type["multi-session"]["answer_session_ids"]) <= 3
    assert by_type["single-session-preference"]["answer"].startswith("The user would prefer responses that")
    assert TOLERANT.match(by_type["temporal-reasoning"]["answer"])
    assert len(by_type["knowledge-update"]["answer_session_ids"]) == 2


@pytest.mark.parametrize("which", ["mini", "small"])
def test_records_follow_the_exact_schema(which: str, mini: list[SynthQuestion], small: list[SynthQuestion]) -> None:
    for item in mini if which == "mini" else small:
        record = item.record
        assert list(record) == KEYS
        assert QID.match(record["question_id"]) and record["question_type"] in QUESTION_TYPES
        assert isinstance(record["answer"], str | int) and not isinstance(record["answer"], bool)
        assert DATE_PATTERN.match(record["question_date"])
        assert all(DATE_PATTERN.match(d) for d in record["haystack_dates"])
        evidence = set(record["answer_session_ids"])
        question_date = parse_lme_date(record["question_date"])
        for sid, date, turns in _sessions(record):
            assert date < question_date
            assert [t["role"] for t in turns] == ["user", "assistant"] * (len(turns) // 2)
            if sid in evidence:
                assert EVIDENCE_ID.match(sid) or ABS_EVIDENCE_ID.match(sid)
                assert all(list(t) == ["role", "content", "has_answer"] for t in turns)
                assert sum(t["has_answer"] for t in turns) == 1  # one planted turn per evidence session
            else:
                assert FILLER_ID.match(sid)
                assert all(list(t) == ["role", "content"] for t in turns)  # no has_answer key in filler


def test_one_filler_id_repeats_with_the_same_content_on_another_date(small: list[SynthQuestion]) -> None:
    for item in small:
        sessions = _sessions(item.record)
        counts = Counter(sid for sid, _, _ in sessions)
        repeated = [sid for sid, n in counts.items() if n > 1]
        assert len(repeated) == 1 and counts[repeated[0]] == 2 and FILLER_ID.match(repeated[0])
        first, second = [(date, turns) for sid, date, turns in sessions if sid == repeated[0]]
        assert first[1] == second[1] and first[0] != second[0]


def test_sessions_are_sorted_except_in_oracle_mode(small: list[SynthQuestion]) -> None:
    for item in small:
        dates = [date for _, date, _ in _sessions(item.record)]
        assert dates == sorted(dates)
    oracle = generate(size="small", questions_per_type=6, abstention=8, seed=11, oracle=True)
    for record, item in zip(oracle, small, strict=True):
        assert sorted(record["haystack_session_ids"]) == sorted(record["answer_session_ids"])
        dates = [date for _, date, _ in _sessions(record)]
        if len(dates) > 1:
            assert dates != sorted(dates)
        assert record["question"] == item.record["question"] and record["answer"] == item.record["answer"]


def _text(turns: list[dict[str, Any]]) -> str:
    return "\n".join(t["content"] for t in turns).lower()


def _check_facts(item: SynthQuestion) -> None:
    record = item.record
    evidence = set(record["answer_session_ids"])
    planted = [t for sid, _, turns in _sessions(record) if sid in evidence for t in turns if t["has_answer"]]
    others = [t for sid, _, turns in _sessions(record) for t in turns if not t.get("has_answer")]
    planted_text, other_text = _text(planted), _text(others)
    assert item.facts
    for fact in item.facts:
        assert fact.lower() in planted_text, (record["question_id"], fact)
        assert fact.lower() not in other_text, (record["question_id"], fact)  # not in filler, nor in replies
    if record["question_type"] == "single-session-assistant":
        assert {t["role"] for t in planted} == {"assistant"}
    elif "_abs" not in record["question_id"]:
        assert {t["role"] for t in planted} == {"user"}


def test_facts_are_planted_in_evidence_turns_only(mini: list[SynthQuestion], small: list[SynthQuestion]) -> None:
    for item in mini + small:
        _check_facts(item)
        record = item.record
        if isinstance(record["answer"], str) and record["question_type"] in (
            "single-session-user", "single-session-assistant", "knowledge-update"
        ) and "_abs" not in record["question_id"]:
            assert record["answer"] == item.facts[0]


def test_answers_follow_from_the_planted_evidence(small: list[SynthQuestion]) -> None:
    seen = Counter()
    for item in small:
        record = item.record
        if "_abs" in record["question_id"]:
            assert record["answer"].startswith("The information provided is not enough.")
            continue
        qtype = record["question_type"]
        seen[qtype] += 1
        evidence = [(date, _text(turns)) for sid, date, turns in _sessions(record)
                    if sid in record["answer_session_ids"]]
        if qtype == "multi-session":
            assert record["answer"] == len(item.facts) and 2 <= len(evidence) <= 3
        elif qtype == "knowledge-update":
            new, old = (fact.lower() for fact in item.facts)
            (old_date,) = [d for d, text in evidence if old in text]
            (new_date,) = [d for d, text in evidence if new in text]
            assert old_date < new_date
            assert record["answer_session_ids"] == sorted(record["answer_session_ids"])
        elif qtype == "temporal-reasoning":
            days, plus_one = map(int, TOLERANT.match(record["answer"]).groups())
            assert plus_one == days + 1
            moments = [next(d for d, text in evidence if fact.lower() in text) for fact in item.facts]
            if len(moments) == 1:  # "how many days have passed since ...": counted to the question date
                moments.append(parse_lme_date(record["question_date"]))
            assert (moments[1].date() - moments[0].date()).days == days
    assert all(seen[t] == 6 for t in QUESTION_TYPES)


def test_the_packaged_fixture_validates_and_regenerates_byte_for_byte(tmp_path: Path) -> None:
    fixture = mini_fixture_path()
    dataset = load_dataset(fixture)
    assert dataset.name == "longmemeval_mini" and len(dataset) == 7
    assert {q.question_type for q in dataset.questions} == set(QUESTION_TYPES)
    assert sum(q.is_abstention for q in dataset.questions) == 1
    assert fixture.stat().st_size < 20_000
    regenerated = write_dataset(generate(size="mini", seed=0), tmp_path / "again.json")
    assert regenerated.read_bytes() == fixture.read_bytes()


def test_same_seed_same_records_and_other_seeds_differ() -> None:
    assert generate(size="small", seed=5) == generate(size="small", seed=5)
    assert generate(size="small", seed=5) != generate(size="small", seed=6)
    # Records are seeded one by one: asking for more questions keeps the earlier ones.
    fewer, more = generate(size="mini", questions_per_type=1, abstention=1), generate(size="mini",
                                                                                         questions_per_type=2)
    assert fewer[0] == more[0] and fewer[1] == more[2] and fewer[-1] == more[-1]


def test_sizes_and_arguments() -> None:
    custom = SynthSize("tiny", sessions=(6, 6), tokens=1_000, pairs=(1, 2), span_days=20)
    records = generate(size=custom, questions_per_type=2, abstention=0)
    assert len(records) == 12 and all(len(r["haystack_sessions"]) == 6 for r in records)
    assert len(generate(questions_per_type=10)) == 60 + 4  # default abstention: 6 % of the answerable ones
    with pytest.raises(ValueError, match="size 'xl' is unknown"):
        generate(size="xl")  # type: ignore[arg-type]  # an unknown size on purpose
    with pytest.raises(ValueError, match="questions_per_type=-1 is invalid"):
        generate(questions_per_type=-1)


def test_an_s_sized_record_looks_like_longmemeval_s() -> None:
    from om_eval.om.tokens import count_text

    (item,) = [i for i in generate_with_facts(size="s", abstention=0, seed=2)
               if i.record["question_type"] == "knowledge-update"]
    record = item.record
    assert 46 <= len(record["haystack_sessions"]) <= 50
    tokens = count_text("\n".join(t["content"] for turns in record["haystack_sessions"] for t in turns))
    assert 100_000 <= tokens <= 130_000
    _check_facts(item)
    # Varied filler: no sentence makes up a noticeable share of the haystack.
    sentences = Counter(s for turns in record["haystack_sessions"] for t in turns
                        for s in re.split(r"(?<=[.?!])\s+", t["content"]))
    assert sentences.most_common(1)[0][1] < 0.01 * sum(sentences.values())


def test_the_word_lists_in_their_data_file_keep_every_generated_dataset_as_it_was() -> None:
    # Pinned when the lists moved from code to om_eval/data/synth_words.json: reordering a list would change this.
    import hashlib
    import json

    from om_eval.data.synth import generate

    data = generate(size="mini", seed=3)
    assert hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16] == "a46f29fdc32f5be9"
