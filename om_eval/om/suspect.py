"""Spotting an Observer reply that repeats old observations instead of describing the new messages.

Why: a small Observer model (a 1.5B one did it) can answer every call with lines copied from the "previous
observations" section of its prompt. Such a reply is well formed, so the degenerate and format checks accept it,
and the engine would mark the new messages observed while recording nothing about them. This module is the pure
test for that failure; :func:`om_eval.om.observer.call_observer` uses it to retry once, and the engine records an
``observation_suspect`` event when the retry repeats too. The Observer passes its instructions along with the
previous observations, so a reply that copies the prompt's example lines (the same model did that on a real
conversation) is caught the same way.

The rule (:func:`find_repetition`) needs two signs at once:

* **repeated share**: the share of the reply's observation lines that already appear among the previous
  observation lines, exactly or nearly (token-set Jaccard >= ``0.8`` after normalising both sides: priority emoji,
  times, bullets, anchor ids, punctuation and case removed);
* **grounding**: the share of the reply's content words (three letters or more, not common function words or the
  Observer's own boilerplate such as "user" or "stated") that occur in the new messages.

A reply is flagged when the repeated share is at least ``0.6`` and the grounding is below ``0.35``. The second
condition is what keeps honest replies safe: a conversation that returns to an old topic produces lines that may
look like old ones, but their words come from the new messages. An Observer that copies an old line has no
reason to use the new batch's words, so its grounding stays near zero. A reply without observation lines, or a
call without previous observations, is never flagged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["MAX_GROUNDING", "MIN_REPEATED_SHARE", "NEAR_MATCH", "Suspicion", "find_repetition", "line_tokens"]

#: Share of reply lines found among the previous observations from which a reply can be a repeat.
MIN_REPEATED_SHARE = 0.6
#: A reply is a repeat only when fewer than this share of its content words occur in the new messages.
MAX_GROUNDING = 0.35
#: Token-set Jaccard at which two normalised lines count as the same observation.
NEAR_MATCH = 0.8

_MARKERS = re.compile(r"[🔴🟡🟢✅]\ufe0f?")
_ANCHOR = re.compile(r"\[O\d+(?:-N\d+)?\]")
_TIME = re.compile(r"\(?\b\d{1,2}:\d{2}(?:\s*[AaPp][Mm])?\b\)?")
_TAG = re.compile(r"^\s*</?[a-z][\w-]*(?:\s[^>]*)?>\s*$")
_DATE_HEADER = re.compile(r"^\s*(?:#+\s*)?date:", re.IGNORECASE)
_TOKEN = re.compile(r"\w+")
_STOPWORDS = frozenset(
    "the and for with that this from have has had was were are been being will would could should about into "
    "over under than then them they their there these those what which when where who whom why how not but "
    "also just very more most some any all each other such only own same too can did does doing its it's "
    "our ours your yours his her hers him she he you we i'm i've don't didn't out off again once here both few "
    "user users assistant stated asked said says mentioned replied noted shared told explained wants wanted "
    "likes liked thread observation observations today yesterday".split()
)


#: ``bytes.translate`` table: every ASCII byte that is not a ``\\w`` character becomes a space; the bytes of other
#: characters stay (no ASCII byte occurs inside one, so their UTF-8 stays whole).
_NOT_WORD = bytes(byte if chr(byte).isalnum() or byte == ord("_") else 32 for byte in range(128)) + bytes(
    range(128, 256))


def _words(lowered: str) -> set[str]:
    """The distinct words of ``_TOKEN.findall(lowered)``, split by a byte translation instead: three times as fast
    on a batch of messages. Other characters stay in the runs it leaves (whitespace among them splits them, being
    no word character either), and only a distinct run holding one is searched again."""
    if lowered.isascii():
        return set(lowered.encode("ascii").translate(_NOT_WORD).decode("ascii").split())
    # surrogatepass: a lone surrogate (JSON allows one) stays a character of its run, as the regex reads it.
    runs = set(lowered.encode("utf-8", "surrogatepass").translate(_NOT_WORD).decode("utf-8", "surrogatepass").split())
    other = {run for run in runs if not run.isascii()}
    return (runs - other).union(*map(_TOKEN.findall, other))


@lru_cache(maxsize=1 << 12)  # a call's reply and previous lines; word sets are large, so few are kept
def line_tokens(line: str) -> frozenset[str]:
    """The words of one observation line, without its priority emoji, time, bullet, anchor id or punctuation.

    Remembered: a reply's lines are read when its lines are picked and again when they are matched, and a
    multi-thread reply's once whole and once per thread; the previous observations recur call after call."""
    text = _ANCHOR.sub(" ", _MARKERS.sub(" ", line))
    text = _TIME.sub(" ", text)
    return frozenset(_words(text.lower()))


def _observation_lines(text: str) -> list[str]:
    """Lines that carry an observation: not blank, not a ``Date:`` header, not an XML tag on its own."""
    return [
        line for line in text.splitlines()
        if line.strip() and not _DATE_HEADER.match(line) and not _TAG.match(line) and line_tokens(line)
    ]


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _content_words(text: str) -> frozenset[str]:
    """The stems of ``text``'s content words (distinct words first: stemming is the slow part)."""
    return frozenset({
        _stem(word) for word in _words(text.lower())
        if len(word) >= 3 and not word.isdigit() and word not in _STOPWORDS
    })


@lru_cache(maxsize=16)
def _distinct_words(text: str) -> frozenset[str]:
    """``text``'s distinct words, lowercased, unstemmed. Remembered: one Observer call asks about the same batch
    for the whole reply and again for each thread."""
    return frozenset(_words(text.lower()))


@lru_cache(maxsize=16)
def _groundings(words: frozenset[str]) -> dict[str, bool]:
    """Which stems were found grounded in ``words`` (one batch's), filled in by :func:`_grounded`: a multi-thread
    reply asks about its stems once whole and again per thread."""
    return {}


def _grounded(stems: frozenset[str], words: frozenset[str]) -> int:
    """How many of ``stems`` are the stem of a content word of ``words``. Only a stem itself or the stem with one of
    :func:`_stem`'s suffixes can have it, so a batch's thousands of words need no stemming for a reply's few dozen
    (a loop, not a generator per stem: this runs on every Observer reply)."""
    known = _groundings(words)
    found = 0
    for stem in stems:
        grounded = known.get(stem)
        if grounded is None:
            grounded = False
            for word in (stem, stem + "s", stem + "es", stem + "ed", stem + "ing"):
                if word in words and word not in _STOPWORDS and not word.isdigit() and _stem(word) == stem:
                    grounded = True
                    break
            known[stem] = grounded
        found += grounded
    return found


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def _find_match(tokens: frozenset[str], previous: Iterable[frozenset[str]]) -> bool:
    for other in previous:
        # Jaccard >= NEAR_MATCH needs the smaller set to be at least NEAR_MATCH of the larger: skip the rest cheaply.
        small, large = sorted((len(tokens), len(other)))
        if small >= NEAR_MATCH * large and _jaccard(tokens, other) >= NEAR_MATCH:
            return True
    return False


@dataclass(frozen=True)
class Suspicion:
    """Why a reply looks like a repeat of old observations."""

    repeated_share: float
    """Share of the reply's observation lines found among the previous observations."""
    grounding: float
    """Share of the reply's content words that occur in the new messages."""
    lines: int
    """Observation lines in the reply."""
    sample: str
    """One repeated line, as the reply wrote it."""

    def describe(self) -> str:
        """One line for logs and event details."""
        return (f"{self.repeated_share:.0%} of {self.lines} reply lines repeat earlier observations or the prompt's "
                "example, "
                f"{self.grounding:.0%} of its words occur in the new messages; e.g. {self.sample.strip()[:160]!r}")


def find_repetition(
    reply: str,
    previous: str,
    new_messages: str,
    *,
    min_repeated_share: float = MIN_REPEATED_SHARE,
    max_grounding: float = MAX_GROUNDING,
) -> Suspicion | None:
    """A :class:`Suspicion` when ``reply`` looks like a copy of ``previous`` rather than notes on ``new_messages``.

    Args:
        reply: the observation text the Observer returned (the inside of ``<observations>``, or every thread's
            observations joined for a multi-thread reply).
        previous: the previous observations the Observer was shown ("" when none).
        new_messages: the formatted messages it was asked to observe.
        min_repeated_share, max_grounding: the thresholds (see the module docstring).

    Returns:
        ``None`` when the reply is not suspect: no previous observations, no observation line in the reply, too
        few repeated lines, or enough of its words found in the new messages.
    """
    reply_lines = _observation_lines(reply)
    if not reply_lines or not previous.strip():
        return None
    # Grounding first: it is linear in the reply and the batch and settles almost every normal reply, while the
    # previous lines (the instructions among them) are long and matching against them is quadratic; reading them
    # first was a quarter of a whole-LoCoMo run's overhead.
    words = _content_words("\n".join(reply_lines))
    if not words:
        grounding = 0.0
    else:
        grounding = _grounded(words, _distinct_words(new_messages)) / len(words)
    if grounding >= max_grounding:
        return None
    previous_lines = [line_tokens(line) for line in _observation_lines(previous)]
    if not previous_lines:
        return None
    exact = set(previous_lines)
    repeated = [line for line in reply_lines
                if (tokens := line_tokens(line)) in exact or _find_match(tokens, previous_lines)]
    share = len(repeated) / len(reply_lines)
    if share < min_repeated_share:
        return None
    return Suspicion(share, grounding, len(reply_lines), repeated[0] if repeated else reply_lines[0])
