"""Evidence tracing: which observation lines hold an evidence turn's words."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.bench.trace import MIN_LINE_COVERAGE, MIN_SHARED_WORDS, _words, matching_lines

_word = st.sampled_from(["bees", "roof", "lisbon", "tram", "sister", "moved", "2023", "paint", "the", "user",
                         "it's", "red", "blue", "cat", "went", "a", "on"])
_line = st.lists(_word, max_size=9).map(lambda words: "* " + " ".join(words))
_text = st.lists(_line, max_size=30).map("\n".join)
_turn = st.lists(_word, max_size=14).map(" ".join)


def _by_scanning_every_line(observations: str, content: str, limit: int = 3) -> list[str]:
    """The definition, line by line."""
    turn = _words(content)
    scored = []
    for line in observations.splitlines():
        words = _words(line)
        shared = len(words & turn)
        if words and shared >= MIN_SHARED_WORDS and shared / len(words) >= MIN_LINE_COVERAGE:
            scored.append((shared / len(words), shared, line.strip()))
    scored.sort(key=lambda item: (-item[0], -item[1]))
    return [line for _, _, line in scored[:limit]]


@settings(max_examples=300, deadline=None)
@given(_text, _turn, st.integers(min_value=1, max_value=5))
def test_the_word_index_finds_what_scanning_every_line_finds(observations: str, content: str, limit: int) -> None:
    assert matching_lines(observations, content, limit) == _by_scanning_every_line(observations, content, limit)


def test_best_coverage_first_then_more_shared_words_then_text_order() -> None:
    observations = "\n".join([
        "* User moved to Lisbon with her sister",  # 3 of its 4 content words ("her" is not in the turn)
        "* bees on the roof painted blue",  # none
        "* moved lisbon sister tram",  # 4 of 4
        "* lisbon sister moved",  # 3 of 3
        "* moved lisbon sister",  # 3 of 3, later in the text
    ])
    found = matching_lines(observations, "My sister and I moved to Lisbon and took the tram", limit=5)
    assert found == ["* moved lisbon sister tram", "* lisbon sister moved", "* moved lisbon sister",
                     "* User moved to Lisbon with her sister"]
    assert matching_lines(observations, "My sister and I moved to Lisbon and took the tram", limit=2) == found[:2]
