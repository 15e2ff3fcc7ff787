"""om-eval's tokenx estimate against the npm ``tokenx`` package at the release Mastra 1.10 and 1.31 run (1.3.0).

Seeded, generated strings (English, code, CJK and kana, Hangul, emoji, numbers, URLs, accented European words,
Cyrillic, odd whitespace, long words, mixed) are counted in one Node batch by the package and here; every count
must be identical. Marker ``mastra``; skipped, saying why, without node/npm or the registry.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from om_eval.om.js.tokenx import VERSION, estimate_tokens, segment_tokens
from om_eval.om.tokens import make_counter
from tests.npm_oracle import node_folder

pytestmark = pytest.mark.mastra

PACKAGES = {"tokenx": VERSION}
CASES = 1500
SEED = 20261124

_SCRIPT = r"""
// Written by om-eval's tests/om/js/test_tokenx_differential.py: counts each string with the tokenx package.
import { estimateTokenCount } from "tokenx";
let input = "";
for await (const chunk of process.stdin) input += chunk;
process.stdout.write(JSON.stringify(JSON.parse(input).map((text) => estimateTokenCount(text))));
"""

ENGLISH = ("the baker kneaded sourdough before dawn while neighbours queued outside for warm rolls and coffee "
           "extraordinarily uncharacteristically I a an it's don't we'll").split()
CODE = ["def f(x):", "return x**2", "{\"key\": [1, 2, 3]}", "if (a && b) { c(); }", "a->b", "x_y_z", "::", "=>",
        "#include <stdio.h>", "SELECT * FROM t;", "foo.bar()", "// note", "<div class='x'>", "`tick`", "~/.cfg"]
CJK = ["日本語", "東京", "ひらがな", "カタカナ", "한국어", "中文字符", "。", "、", "ｆｕｌｌ", "㈱", "ㄱㄴ", "ー"]
EMOJI = ["🍞", "👍🏽", "🇫🇷", "❤️", "⚠️", "👩‍👩‍👧", "🔴", "✅", "𝔘", "😀😀"]
NUMBERS = ["7", "42", "2023", "3.14", "1,000", "1,000.50", "10.0.1", "1e9", "-5", "+33", "0x1F", "1.", ",5"]
URLS = ["https://example.org/a/b?c=d&e=f", "http://x.io", "www.bakery.test/menu", "mailto:a@b.c", "ftp://h:21/p"]
EUROPEAN = ["Bäckerei", "Straße", "GRÖSSE", "café", "CRÈME", "niño", "Ÿvette", "łódź", "Żółć", "Příliš", "ďábel",
            "Œuvre", "façade", "naïve", "ÀÉÎ", "señor", "Ærø"]
OTHER_SCRIPTS = ["привет", "МОСКВА", "ελληνικά", "שלום", "مرحبا", "हिन्दी", "ไทย"]
SPACES = [" ", "  ", "\n", "\n\n", "\t", "\u00a0", "\u2028", "\ufeff", "\x1c", "\x85", "\u3000", "\r\n", " \n "]
PUNCT = [".", ",", "!", "?", "...", "--", "—", "–", "“", "”", "'", "\"", "(", ")", "[", "]", "@", "#", "%", "&", "*",
         ";", ":", "/", "\\", "|", "^", "`", "~", "_", "-", "+", "=", "<", ">", "{", "}", "¿", "¡", "…"]
POOLS = (ENGLISH, CODE, CJK, EMOJI, NUMBERS, URLS, EUROPEAN, OTHER_SCRIPTS, PUNCT)


def _piece(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.05:
        return rng.choice("abcdefghijklmnopqrstuvwxyzé") * rng.randint(4, 40)  # long words
    if roll < 0.08:
        return "".join(chr(rng.randint(0x20, 0x2FFF)) for _ in range(rng.randint(1, 6)))  # anything in the BMP
    return rng.choice(rng.choice(POOLS))


def generated_strings(count: int, seed: int = SEED) -> list[str]:
    rng = random.Random(seed)
    texts = ["", " ", "a", "abcd", "1234567", "\n\n\n", "🍞" * 5, "東京" * 3]
    while len(texts) < count:
        pieces = [_piece(rng) for _ in range(rng.randint(1, 40))]
        glue = [rng.choice(SPACES) if rng.random() < 0.8 else "" for _ in pieces]
        texts.append("".join(p + g for p, g in zip(pieces, glue)))
    return texts


@pytest.fixture(scope="module")
def package_counts(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], list[int]]:
    texts = generated_strings(CASES)
    folder = node_folder(tmp_path_factory, "tokenx-oracle", PACKAGES)
    return texts, folder.run(_SCRIPT, texts, name="om_eval_tokenx.mjs")


def test_counts_are_identical_to_the_npm_package(package_counts: tuple[list[str], list[int]]) -> None:
    texts, expected = package_counts
    ours = [estimate_tokens(text) for text in texts]
    different = [(text, want, got) for text, want, got in zip(texts, expected, ours) if want != got]
    print(f"\ntokenx {VERSION}: {len(texts)} strings, {len(texts) - len(different)} identical")
    assert not different, f"{len(different)} of {len(texts)} differ, e.g. {different[:3]!r}"


def test_the_counter_is_reached_by_name() -> None:
    counter = make_counter("tokenx")
    assert counter.name == f"tokenx/{VERSION}"
    assert make_counter(f"tokenx/{VERSION}").name == counter.name
    with pytest.raises(ValueError, match="tokenx"):
        make_counter("tokenx/9.9.9")


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("   \n\t ", 0),
        ("bread", 1),  # 5 letters / 6 per token, rounded up
        ("sourdough", 2),  # 9 / 6
        ("the rye", 2),  # two short words
        ("Bäckerei", 3),  # German letters: 3 per token
        ("Żółć", 2),  # Polish: 3.5 per token
        ("1,000.50", 5),  # split at its punctuation first: five short pieces, one token each
        ("12345678", 1),  # a number is one token, however long
        ("東京タワー", 5),  # one per CJK or kana character
        ("...!!!", 3),  # punctuation runs: half their length
        ("🍞🍞🍞🍞", 2),  # 8 UTF-16 units, no rule but the default: 8 / 6
    ],
)
def test_examples_worked_by_hand(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


def test_the_estimate_is_the_sum_over_pieces() -> None:
    assert estimate_tokens("sourdough bread") == segment_tokens("sourdough") + segment_tokens("bread")


@given(st.text(max_size=200), st.text(max_size=200))
def test_lines_are_counted_independently(first: str, second: str) -> None:
    # What lets the estimate be cached line by line: a line feed never joins or splits a piece.
    assert estimate_tokens(first + "\n" + second) == estimate_tokens(first) + estimate_tokens(second)


@given(st.text(max_size=300))
def test_the_counted_pieces_are_the_splits_pieces_less_whitespace(text: str) -> None:
    import re

    from om_eval.om.js import tokenx
    from om_eval.om.js.text import WS

    # tokenx splits at whitespace runs and at ASCII punctuation runs, keeping both; whitespace counts 0.
    split = re.split(rf"([{WS}]+|{tokenx._PUNCTUATION}+)", text)
    assert tokenx._PIECES.findall(text) == [piece for piece in split if piece and not re.fullmatch(f"[{WS}]+", piece)]


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=300))
def test_ascii_lines_take_a_faster_path_to_the_same_count(text: str) -> None:
    """Every ASCII character (controls, U+001C..U+001F, punctuation, digits) counts as through the regex path."""
    from om_eval.om.js import tokenx

    for line in text.split("\n"):
        assert tokenx._ascii_line_tokens(line.encode("ascii")) == sum(
            map(segment_tokens, tokenx._PIECES.findall(line)))
