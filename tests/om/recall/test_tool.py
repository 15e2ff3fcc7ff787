"""The recall tool's behaviour on small histories (the differential suite checks it against 1.31 at scale)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.om.recall.tool import RecallError, RecallHistory, ThreadInfo, parse_js_date, recall, result_json
from om_eval.om.records import Message

START = datetime(2026, 1, 1, tzinfo=UTC)


def history(messages: int = 7, text: str = "msg {i}") -> RecallHistory:
    threads = [ThreadInfo("t1", "u", START, START, "Trip"), ThreadInfo("t2", "u", START, START + timedelta(days=1)),
               ThreadInfo("x1", "someone-else", START, START)]
    stored = [Message(f"m{i}", "t1", "user" if i % 2 == 0 else "assistant", text.format(i=i),
                      START + timedelta(minutes=i)) for i in range(messages)]
    stored.append(Message("x-m", "x1", "user", "not yours", START))
    return RecallHistory(threads, stored)


def ask(arguments: dict, current: str | None = "t1", scope: str = "resource", store: RecallHistory | None = None):
    return recall(store or history(), arguments, thread_id=current, resource_id="u", scope=scope)  # type: ignore[arg-type]  # a RecallScope name, or a wrong one on purpose


def ids(text: str) -> list[str]:
    return [line.split("[")[-1].rstrip("]:") for line in text.splitlines() if line.startswith("**")]


def test_threads_lists_the_resources_threads_newest_first_and_marks_the_current_one() -> None:
    result = ask({"mode": "threads"})
    assert result["count"] == 2 and result["hasMore"] is False
    lines = result["threads"].splitlines()
    assert lines[0] == "- **(untitled)**" and lines[1] == "  id: t2"
    assert lines[3] == "- **Trip** \u2190 current"
    assert "x1" not in result["threads"]


def test_thread_scope_shows_only_the_current_thread() -> None:
    result = ask({"mode": "threads"}, scope="thread")
    assert result["count"] == 1 and "id: t1" in result["threads"]


def test_messages_page_forward_and_backward_from_a_cursor_in_time_order() -> None:
    forward = ask({"cursor": "m3", "limit": 2})
    assert ids(forward["messages"]) == ["m4", "m5"] and forward["hasNextPage"] and not forward["hasPrevPage"]
    backward = ask({"cursor": "m3", "page": -1, "limit": 2})
    assert ids(backward["messages"]) == ["m1", "m2"] and backward["hasPrevPage"]


def test_without_a_cursor_the_current_thread_is_read_and_the_result_says_so() -> None:
    result = ask({"limit": 3, "anchor": "end"})
    assert result["messages"].startswith("threadId wasn't passed so used default t1.\n\n")
    assert ids(result["messages"]) == ["m6", "m5", "m4"]  # newest first, as 1.31 shows an end-anchored page


def test_a_range_as_cursor_gets_a_hint_and_an_unknown_cursor_an_error() -> None:
    hint = ask({"cursor": "m1:m4"})
    assert 'start="m1" or end="m4"' in hint["messages"] and hint["count"] == 0
    with pytest.raises(RecallError, match="Could not resolve cursor message: nope"):
        ask({"cursor": "nope"})


def test_another_resources_thread_or_message_is_refused() -> None:
    with pytest.raises(RecallError, match="does not belong to the active resource"):
        ask({"threadId": "x1"})
    with pytest.raises(RecallError, match="Could not resolve cursor message"):
        ask({"cursor": "x-m"})


def test_arguments_outside_the_schema_are_returned_as_an_error_object_naming_each_field() -> None:
    result = ask({"limit": 0, "page": 1.5, "detail": "medium"})
    assert result["error"] is True
    assert "- page: must be integer\n- limit: must be >= 1\n- detail: must be equal to one of the allowed values" \
        in result["message"]
    assert ask({"limit": None, "page": None})["count"] == 7  # nulls alone count as absent


def test_low_detail_cuts_long_text_with_a_hint_to_read_the_part_whole() -> None:
    long = "word " * 400
    result = ask({"cursor": "m0", "limit": 1}, store=history(text=long + "{i}"))
    assert '[recall cursor="m1" partIndex=0 detail="high" for more]' in result["messages"]
    whole = ask({"cursor": "m1", "partIndex": 0}, store=history(text=long + "{i}"))
    assert whole["text"] == long + "1" and whole["truncated"] is False


@settings(max_examples=40, deadline=None)
@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=60),
       st.integers(min_value=1, max_value=400))
def test_reading_a_part_by_char_offsets_gives_back_the_whole_text(piece: str, repeat: int) -> None:
    text = piece * repeat
    store = RecallHistory([ThreadInfo("t1", "u", START, START)], [Message("m0", "t1", "user", text, START)])
    chunks, offset = [], 0
    for _ in range(1000):
        result = ask({"cursor": "m0", "partIndex": 0, "charOffset": offset}, store=store)
        chunks.append(result["text"])
        if "nextCharOffset" not in result:
            break
        assert result["nextCharOffset"] > offset or not result["text"]
        offset = result["nextCharOffset"]
        if not result["truncated"]:
            break
    assert "".join(chunks) == text


def test_results_read_as_compact_json() -> None:
    text = result_json(ask({"mode": "threads"}))
    assert json.loads(text)["count"] == 2 and ", " not in text.split('"threads"')[0]


def test_dates_read_as_javascript_reads_them() -> None:
    assert parse_js_date("2026-03-06") == datetime(2026, 3, 6, tzinfo=UTC)
    assert parse_js_date("2026-03-06T10:00:00+02:00") == datetime(2026, 3, 6, 8, tzinfo=UTC)
    assert parse_js_date("March 5, 2026") == datetime(2026, 3, 5, tzinfo=UTC)
    assert parse_js_date("yesterday") is None


# -- mode="search" (om.retrieval_search=bm25, om-eval's stand-in for 1.31's vector search) -------------------------

def search_index():
    from om_eval.om.recall.search import Bm25GroupSearch, IndexedGroup

    return Bm25GroupSearch([
        IndexedGroup("t1", "g1", "m0:m2", "* User adopted a grey cat called Pebble", START + timedelta(minutes=2)),
        IndexedGroup("t2", "g2", "m3:m6", "* User repainted the hallway pale green", START + timedelta(minutes=6)),
        IndexedGroup("t2", "g3", "odd", "* User likes green tea", START + timedelta(minutes=7)),
    ])


def test_search_lays_out_hits_as_1_31_does_best_first() -> None:
    result = recall(history(), {"mode": "search", "query": "green hallway"}, thread_id="t1", resource_id="u",
                    search=search_index())
    assert result["count"] == 2
    first, second = result["results"].split("\n\n")
    assert first.splitlines()[:4] == [
        "### Older memory from another thread",
        "This result came from an older memory generation in another thread.",
        "- thread: t2 ((untitled))",
        "- source: raw messages from ID m3 through ID m6",
    ]
    assert "- observation group: g2" in first and "```text\n* User repainted the hallway pale green\n```" in first
    assert "- source: raw messages from ID odd through ID (unknown)" in second
    scores = [float(line.split(": ")[1]) for line in result["results"].splitlines() if line.startswith("- score")]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0


def test_search_filters_by_thread_and_time_and_says_when_nothing_matches() -> None:
    index = search_index()
    scoped = recall(history(), {"mode": "search", "query": "green", "threadId": "t1"}, thread_id="t1",
                    resource_id="u", search=index)
    assert scoped == {"results": "No matching messages found.", "count": 0}
    late = recall(history(), {"mode": "search", "query": "green", "after": "2026-01-01T00:06:30Z"}, thread_id="t1",
                  resource_id="u", search=index)
    assert late["count"] == 1 and "g3" in late["results"]
    assert recall(history(), {"mode": "search", "query": "zebra"}, thread_id="t1", resource_id="u",
                  search=index)["count"] == 0


def test_search_is_only_offered_with_an_index() -> None:
    refused = ask({"mode": "search", "query": "cat"})
    assert refused["error"] is True and "- mode: must be equal to one of the allowed values" in refused["message"]
    with pytest.raises(RecallError, match='query is required for mode="search"'):
        recall(history(), {"mode": "search"}, thread_id="t1", resource_id="u", search=search_index())
