"""A history's hash, made from each session's JSON once, is the hash of the whole list's canonical JSON."""

from __future__ import annotations

from datetime import datetime

from hypothesis import given
from hypothesis import strategies as st

from om_eval.common.files import short_hash
from om_eval.data.records import HaystackSession, Question, Turn
from om_eval.llm.request import canonical_json
from om_eval.memory.identity import haystack_hash

_TEXT = st.text(max_size=20)
_TURNS = st.lists(st.builds(Turn, st.sampled_from(["user", "assistant", "tool"]), _TEXT), max_size=4)
_SESSIONS = st.lists(st.tuples(_TEXT, _TEXT, _TURNS), max_size=4)


def _question(sessions: list[tuple[str, str, list[Turn]]], shared: bool) -> Question:
    made = tuple(HaystackSession("h", index, session_id, datetime(2023, 5, 1), date_text, tuple(turns), False)
                 for index, (session_id, date_text, turns) in enumerate(sessions))
    return Question("q", "single-session-user", "what?", "x", datetime(2023, 5, 2), "2023/05/02 (Tue) 10:00", made, (),
                    haystack_id="conversation" if shared else None)


@given(_SESSIONS, st.booleans())
def test_the_history_hash_is_the_hash_of_its_sessions_canonical_json(sessions: list[tuple[str, str, list[Turn]]],
                                                                      shared: bool) -> None:
    """Shared or not (made per session, or at once), the same hash."""
    question = _question(sessions, shared)
    whole = [[s.session_id, s.date_text, [[t.role, t.content] for t in s.turns]] for s in question.sessions]
    assert haystack_hash(question) == haystack_hash(question) == short_hash(canonical_json(whole), 12)
