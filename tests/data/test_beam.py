"""Reading BEAM: tiers found the ways a copy is laid out, batches dated from their anchors, evidence ids read through
every shape upstream uses, and a clear line for each malformed file, missing tier and question without a rubric."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from om_eval.data.beam import BeamValidationError, read_chat, tier_folder
from om_eval.data.beam_questions import beam_dataset
from om_eval.data.reading import PinnedFileNotFoundError
from tests.data.beam_fixture import write_tier

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "beam"


def test_a_tier_is_a_dataset_of_shared_haystacks_with_dated_sessions(tmp_path: Path) -> None:
    dataset = beam_dataset(write_tier(tmp_path), tier="100K", verify=False)
    assert dataset.benchmark == "beam" and len(dataset) == 40
    questions = dataset.by_id()
    first = questions["beam_100K_1_knowledge_update_0"]
    assert first.haystack_id == "beam_100K_1" and first.rubric == ("LLM response should state: March 29",)
    # The second batch has no anchor: it keeps the first batch's date; the question is asked a day after the last.
    assert [s.date_text for s in first.sessions] == ["2024/03/15 (Fri) 00:00", "2024/03/15 (Fri) 00:00",
                                                     "2024/05/02 (Thu) 00:00"]
    assert first.question_date_text == "2024/05/03 (Fri) 00:00"
    marked = [t.content for s in first.sessions for t in s.turns if t.has_answer]
    assert marked == ["The dashboard API answers in about 400ms. ->-> 2,2",
                      "The dashboard API now answers in about 250ms after caching. ->-> 3,2"]
    assert first.answer_session_ids == ("batch_2", "batch_3")
    ordering = questions["beam_100K_2_event_ordering_1"]
    assert ordering.raw["source_chat_ids"] == [6, 12] and ordering.answer.startswith("First the category")
    assert questions["beam_100K_1_abstention_0"].is_abstention
    assert questions["beam_100K_1_instruction_following_0"].answer == "Code is shown with syntax highlighting."


@pytest.mark.parametrize("layout", ["tiers", "clone", "tier"])
def test_a_copy_is_found_as_a_folder_of_tiers_a_clone_or_the_tier_itself(tmp_path: Path, layout: str) -> None:
    root = {"tiers": tmp_path, "clone": tmp_path / "chats", "tier": tmp_path}[layout]
    write_tier(root)
    given = tmp_path / "100K" if layout == "tier" else tmp_path
    assert tier_folder(given, "100K") == root / "100K"


def test_a_missing_tier_names_what_the_copy_holds(tmp_path: Path) -> None:
    write_tier(tmp_path)
    with pytest.raises(PinnedFileNotFoundError, match=r"BEAM tier 500K not found: .* holds 100K"):
        tier_folder(tmp_path, "500K")
    with pytest.raises(BeamValidationError, match="'2M' is not a BEAM tier"):
        tier_folder(tmp_path, "2M")


def test_no_copy_and_no_downloads_says_how_to_give_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BEAM_DIR", raising=False)
    monkeypatch.setenv("OM_EVAL_CACHE_DIR", str(tmp_path))
    with pytest.raises(PinnedFileNotFoundError, match=r"downloads are off: set \$BEAM_DIR or dataset.path"):
        tier_folder(None, "100K")


@pytest.mark.parametrize(("damage", "message"), [
    (lambda c, q: c.write_text("[{"), r"chat.json: not JSON"),
    (lambda c, q: c.write_text(json.dumps([{"turns": [[{"role": "user", "content": "x"}]]}])),
     r"chat.json: field \[0\].turns\[0\]\[0\].id: must be an integer message id"),
    (lambda c, q: c.write_text(json.dumps([{"turns": [[{"role": "user", "id": 1, "content": "x"}]]}])),
     r"has no time anchor in any batch"),
    (lambda c, q: q.write_text(json.dumps({**json.loads(q.read_text()), "summarization": [{"question": "?"}]})),
     r"probing_questions.json: field summarization\[0\].rubric: every BEAM question needs a rubric"),
    (lambda c, q: q.write_text(json.dumps({k: [] for k in json.loads(q.read_text())})),
     r"holds no question: a chat without questions cannot be scored"),
    (lambda c, q: q.write_text(json.dumps({"memory": []})), r"abilities \['memory'\] are unknown"),
    (lambda c, q: q.write_text(json.dumps({**json.loads(q.read_text()), "summarization": [
        {"question": "?", "rubric": ["x"], "source_chat_ids": [4, 999]}]})),
     r"field summarization\[0\].source_chat_ids: cites message ids \[999\] that chat.json does not have"),
    (lambda c, q: q.write_text(json.dumps({**json.loads(q.read_text()), "summarization": [
        {"question": "?", "rubric": ["x"], "source_chat_ids": ["chat_id: 4"]}]})),
     r"field summarization\[0\].source_chat_ids: 'chat_id: 4' is not a message id"),
])
def test_a_malformed_file_stops_with_one_line_naming_it(tmp_path: Path, damage, message: str) -> None:
    write_tier(tmp_path)
    chat = tmp_path / "100K" / "2" / "chat.json"
    damage(chat, chat.parent / "probing_questions" / "probing_questions.json")
    with pytest.raises(BeamValidationError, match=message) as caught:
        beam_dataset(tmp_path, tier="100K", verify=False)
    assert "\n" not in str(caught.value) and "/100K/2/" in str(caught.value)


def test_a_file_of_the_pinned_commit_is_checked_unless_told_not_to(tmp_path: Path) -> None:
    write_tier(tmp_path, chats=1)  # 100K/1 is a pinned file name with other bytes
    with pytest.raises(BeamValidationError, match=r"sha256 [0-9a-f]+ is not the pinned .*dataset.verify=false"):
        read_chat(tmp_path / "100K", 1)
    assert read_chat(tmp_path / "100K", 1, verify=False).sessions


@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared BEAM copy (../shared/data/beam) is not on this machine")
def test_the_shared_copy_reads_as_upstreams_pinned_files() -> None:
    dataset = beam_dataset(SHARED, tier="100K")
    assert len(dataset) == 400 and len({e.memory_owner for e in dataset.entries}) == 20
    question = next(dataset.iter_questions())
    assert question.rubric and question.sessions[0].date_text == "2024/03/15 (Fri) 00:00"
