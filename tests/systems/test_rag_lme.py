"""memory=rag_lme: BM25 over user-text keys, the top k read by date in the long-context reader's layout."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from om_eval.bench.retrieval import bm25_okapi_scores
from om_eval.bench.seam import grade_ranking
from om_eval.bench.turn_costs import PartRecorder
from om_eval.data.records import Question
from om_eval.memory.view import history_view, question_view
from om_eval.om.config import ConfigError
from om_eval.systems.rag_lme import LongMemEvalRetrievalSystem
from tests.systems.helpers import FakeServices, WordCounter, question, session

HAYSTACK = question(
    session(0, "answer_a", ("user", "I moved to Lisbon last spring.", True), ("assistant", "Nice city."), day=5),
    session(1, "filler_b", ("user", "Tell me about the weather."), ("assistant", "It varies."), day=1),
    session(2, "filler_c", ("user", "Which city is sunnier, Lisbon or Porto?"), ("assistant", "Lisbon."), day=9),
    text="Which city did I move to?",
)


def context(options: dict):
    system = LongMemEvalRetrievalSystem(options)
    services = FakeServices()
    index = asyncio.run(system.ingest(history_view(HAYSTACK), services))
    return asyncio.run(system.context(index, question_view(HAYSTACK), services))


def test_session_keys_are_ranked_by_bm25_and_shown_by_date() -> None:
    shown = context({"granularity": "session", "top_k": 2})
    scores = bm25_okapi_scores(["I moved to Lisbon last spring.", "Tell me about the weather.",
                                "Which city is sunnier, Lisbon or Porto?"], HAYSTACK.question)
    best_two = sorted(range(3), key=lambda i: -scores[i])[:2]
    assert list(shown.ranked_ids[:2]) == [["answer_a#0", "filler_b#1", "filler_c#2"][i] for i in best_two]
    prompt = shown.messages[0]["content"]
    # Read by date: the session of day 5 before the one of day 9, numbered in that order.
    assert prompt.index("I moved to Lisbon") < prompt.index("sunnier") and "### Conversation 2" in prompt
    assert "Tell me about the weather" not in prompt
    assert prompt.endswith("Answer:")
    assert grade_ranking("rag_lme", shown, HAYSTACK, history_view(HAYSTACK)).correct == ("answer_a#0",)


def test_turn_keys_show_the_turn_after_a_hit() -> None:
    shown = context({"granularity": "turn", "top_k": 1})
    # Tokens are split on single spaces, as upstream splits them: "to?" is not "to", so "Which" and "city" win.
    assert shown.ranked_ids[0] == "filler_c#2:0"  # the user turn's view id; its document holds the reply too
    assert shown.documents["filler_c#2:0"] == ("filler_c#2:0", "filler_c#2:1")
    assert '"content": "Lisbon."' in shown.injected and "moved" not in shown.injected


def test_the_history_is_cut_to_the_reader_budget() -> None:
    shown = context({"granularity": "session", "top_k": 3, "context_tokens": 1512, "max_tokens": 500})
    assert len(shown.injected.split()) <= 12


@pytest.mark.parametrize(("options", "named"), [({"retriever": "tfidf"}, "memory.retriever='tfidf'"),
                                                ({"granularity": "round"}, "memory.granularity='round'"),
                                                ({"context_tokens": 1000}, "leaves no room"),
                                                ({"k": 5}, "memory.k is not an option of memory=rag_lme")])
def test_bad_options_are_named(options: dict, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        LongMemEvalRetrievalSystem(options)


def test_the_official_reader_prompt_is_read_from_the_pinned_file(tmp_path, monkeypatch) -> None:
    """With a LongMemEval clone (LONGMEMEVAL_REPO), the paper's own reader prompt lays the hits out."""
    import os
    import subprocess

    from om_eval.bench.official_reader import RUN_GENERATION

    repo = os.environ.get("LONGMEMEVAL_REPO")
    if not repo:
        pytest.skip("set LONGMEMEVAL_REPO=<a clone of xiaowu0162/LongMemEval or its git dir> to read its reader")
    source = tmp_path / RUN_GENERATION.path
    source.parent.mkdir(parents=True)
    if (Path(repo) / RUN_GENERATION.path).is_file():
        source.write_bytes((Path(repo) / RUN_GENERATION.path).read_bytes())
    else:
        from om_eval.bench.upstream import PINNED_COMMIT

        source.write_bytes(subprocess.run(["git", f"--git-dir={repo}", "show",
                                           f"{PINNED_COMMIT}:{RUN_GENERATION.path}"], capture_output=True,
                                          check=True).stdout)
    shown = context({"granularity": "session", "top_k": 2, "reader": "official", "reader_source": str(tmp_path)})
    prompt = shown.messages[0]["content"]
    from om_eval.bench.official_reader import load_official_reader

    reader = load_official_reader(str(tmp_path))  # the upstream text stays upstream's: compared, never written here
    first_header = reader.chunk_header.format(1, HAYSTACK.sessions[0].date_text, "")
    assert first_header in prompt and prompt.startswith(reader.answer_template.split("{}", 1)[0])
    assert prompt.rstrip().endswith(reader.answer_template.rsplit("{}", 1)[1].rstrip())
    assert '\n[{"role": "user", "content": "I moved to Lisbon last spring."}' in prompt


def test_a_reader_file_that_is_not_the_pinned_one_is_refused(tmp_path) -> None:
    from om_eval.bench.official_reader import RUN_GENERATION

    fake = tmp_path / RUN_GENERATION.path
    fake.parent.mkdir(parents=True)
    fake.write_text("answer = 'History Chats:\\n\\n{}\\n{}\\n{}\\nAnswer:'\n")
    system = LongMemEvalRetrievalSystem({"reader": "official", "reader_source": str(tmp_path)})
    with pytest.raises(ConfigError, match="differs from the pinned"):
        system.prepare()


def recorded_turns(options: dict, haystack: Question = HAYSTACK) -> tuple[FakeServices, list[list[str]]]:
    """The services the turns went to, and each turn's shown documents by id."""
    services = FakeServices(turns=PartRecorder(WordCounter()))
    index = asyncio.run(LongMemEvalRetrievalSystem(options).ingest(history_view(haystack), services))
    shown = [[index.documents[part.key[1]].id for part in parts
              if isinstance(part.key, tuple) and part.key[0] == "document"] for parts in services.recorded]
    return services, shown


@pytest.mark.parametrize("options", [{"granularity": "session"}, {"granularity": "turn"},
                                     {"granularity": "turn", "retriever": "embedding"}])
def test_each_user_turn_retrieves_for_its_own_message_from_the_sessions_before(options: dict) -> None:
    services, shown = recorded_turns({**options, "top_k": 1})
    assert len(services.embedded) == (1 if options.get("retriever") == "embedding" else 0)  # the index only
    suffix = ":0" if options["granularity"] == "turn" else ""  # a session's view id, or its first turn's
    # In date order: the weather (nothing before it), the move (only the weather before), then "Which city is
    # sunnier, Lisbon or Porto?", which finds the move.
    assert shown == [[], [f"filler_b#1{suffix}"], [f"answer_a#0{suffix}"]]
    table = services.turns.finish() if services.turns is not None else None
    assert table is not None and len(table) == 3 and table.head[2] > table.head[0]


def test_the_embedding_retriever_over_sessions_records_no_turns_rather_than_embed_every_message() -> None:
    services, _ = recorded_turns({"granularity": "session", "retriever": "embedding"})
    assert services.recorded == [] and len(services.embedded) == 1


def test_sessions_sharing_an_id_or_without_turns_are_told_apart() -> None:
    # A cleaned haystack repeats a session's id with other turns; a session may have no turns at all.
    haystack = question(
        session(0, "dup", ("user", "I moved to Lisbon last spring."), ("assistant", "Nice."), day=1),
        session(1, "dup", ("user", "My dog is called Rex and he likes the beach."), ("assistant", "Cute."), day=2),
        session(2, "empty", day=3),
        session(3, "later", ("user", "When I moved to Lisbon"), ("assistant", "Yes."), ("user", "My dog is called"),
                day=4),
    )
    services, shown = recorded_turns({"top_k": 1}, haystack)
    assert shown[2:] == [["dup#0"], ["dup#1"]]  # the move, then the dog: BM25 over user text, split on spaces
    texts = {part.key: part.text for parts in services.recorded for part in parts}
    shown_parts = [part.key for parts in services.recorded[2:] for part in parts if part.key[0] == "document"]
    # Two documents named "dup", each counted as its own text.
    assert len(set(shown_parts)) == 2 and len({texts[key] for key in shown_parts}) == 2
