"""Seeded synthetic datasets in the exact LongMemEval schema (longmemeval-reference §1.3, §6.2).

The real files cannot be fetched offline, so tests, the demo and speed measurements use invented data with the
same shape: a JSON array of records, dates as ``YYYY/MM/DD (Day) HH:MM``, ``answer`` text or a JSON int,
``has_answer`` only on the turns of evidence sessions, evidence ids ``answer_<8hex>_<n>`` (``answer_<8hex>_abs``
for abstention), filler ids ``sharegpt_<id>_<n>`` / ``ultrachat_<n>`` / ``<8hex>_<n>``, one filler id repeated
within each record (identical content, another date, as in upstream issue #54), sessions sorted by date unless
``oracle=True`` (evidence sessions only, unsorted, like the oracle file).

Every question plants evidence turns whose facts it asks about; the facts come from pools that never occur in the
filler vocabulary, so a fact is found only in ``has_answer`` turns. Each record draws from its own generator seeded
by (seed, kind, index): adding questions never changes the earlier ones. Filler is built from topic vocabularies
and sentence templates chosen by the generator, so it varies from session to session; its length is budgeted
in characters (:data:`CHARS_PER_TOKEN`, calibrated on o200k_base) because counting tokens while generating is slow.
"""

from __future__ import annotations

import json
import os
import random
import string
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from om_eval.common.files import atomic_writer
from om_eval.data.records import QUESTION_TYPES, format_lme_date

__all__ = [
    "ABSTENTION_TYPES",
    "CHARS_PER_TOKEN",
    "SIZES",
    "SynthQuestion",
    "SynthSize",
    "generate",
    "generate_with_facts",
    "iter_generate",
    "mini_fixture_path",
    "write_dataset",
]

#: Characters per o200k_base token of the generated English filler (measured on S-sized records).
CHARS_PER_TOKEN = 4.93
#: Base types of abstention records, used in turn (the benchmark's 30 are MS 12, SSU 6, KU 6, TR 6).
ABSTENTION_TYPES = ("multi-session", "single-session-user", "knowledge-update", "temporal-reasoning")


@dataclass(frozen=True)
class SynthSize:
    """How big each question's haystack is.

    ``tokens == 0`` means minimal turns: one sentence each.
    """

    name: str
    sessions: tuple[int, int]
    """Range (inclusive) of haystack sessions per question, evidence included (at least evidence + 2)."""
    tokens: int
    """Approximate o200k_base tokens of all turn contents of one question."""
    pairs: tuple[int, int]
    """Range of user/assistant pairs per session."""
    span_days: int = 120
    """The haystack covers this many days before the question date."""


SIZES: dict[str, SynthSize] = {
    "mini": SynthSize("mini", sessions=(4, 4), tokens=0, pairs=(1, 1), span_days=30),
    "small": SynthSize("small", sessions=(10, 14), tokens=12_000, pairs=(2, 4), span_days=60),
    "s": SynthSize("s", sessions=(46, 50), tokens=115_000, pairs=(3, 7), span_days=150),
    # LongMemEval_M: ~500 sessions and ~1.5M tokens per question (about 7.5 MB of JSON each).
    "m": SynthSize("m", sessions=(490, 510), tokens=1_500_000, pairs=(3, 7), span_days=300),
}


@dataclass(frozen=True)
class SynthQuestion:
    """A generated record with the fact strings planted in its evidence turns (for tests and reading aids)."""

    record: dict[str, Any]
    facts: tuple[str, ...]


# ---------------------------------------------------------------------------------------------- filler text

# The word lists are data (om_eval/data/synth_words.json), in the order the generator draws from them: reordering a
# list changes every generated dataset.
_WORDS: dict[str, Any] = json.loads(
    resources.files("om_eval.data").joinpath("synth_words.json").read_text(encoding="utf-8")
)


def _words(key: str) -> tuple[str, ...]:
    return tuple(_WORDS[key])


#: (topic, nouns of that topic) for the off-topic chat.
_TOPICS: tuple[tuple[str, tuple[str, ...]], ...] = tuple((name, tuple(nouns)) for name, nouns in _WORDS["topics"])
_ADJ, _ADV, _VERB, _CONN = _words("adj"), _words("adv"), _words("verb"), _words("conn")
_GOAL, _WHEN, _FEEL = _words("goal"), _words("when"), _words("feel")
_USER_TEMPLATES, _ASSISTANT_TEMPLATES = _words("user_templates"), _words("assistant_templates")
_GENERIC_SLOTS = {"adj": _ADJ, "adv": _ADV, "verb": _VERB, "verb2": _VERB, "conn": _CONN, "goal": _GOAL,
                  "when": _WHEN, "feel": _FEEL}


def _compile(template: str) -> tuple[tuple[str, str | None], ...]:
    return tuple((literal, name) for literal, name, _, _ in string.Formatter().parse(template))


_USER_COMPILED = tuple(_compile(t) for t in _USER_TEMPLATES)
_ASSISTANT_COMPILED = tuple(_compile(t) for t in _ASSISTANT_TEMPLATES)


class _Filler:
    """Sentences and sessions of off-topic chat, drawn from one record's generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def sentence(self, templates: Sequence[tuple[tuple[str, str | None], ...]], topic: str,
                 nouns: Sequence[str]) -> str:
        choice = self.rng.choice
        parts = []
        noun = ""
        for literal, name in choice(templates):
            parts.append(literal)
            if name is None:
                continue
            if name == "topic":
                parts.append(topic)
            elif name == "noun" or name == "noun2":
                pick = choice(nouns)
                while pick == noun:  # two noun slots in one sentence never name the same thing
                    pick = choice(nouns)
                noun = pick
                parts.append(pick)
            else:
                parts.append(choice(_GENERIC_SLOTS[name]))
        return "".join(parts)

    def text(self, role: str, topic: str, nouns: Sequence[str], budget: int) -> str:
        """At least one sentence, then more until ``budget`` characters; assistants sometimes number steps."""
        templates = _USER_COMPILED if role == "user" else _ASSISTANT_COMPILED
        numbered = role == "assistant" and budget > 600 and self.rng.random() < 0.3
        parts: list[str] = []
        size = 0
        while not parts or size + 45 < budget:  # stop about half a sentence early: no systematic overshoot
            sentence = self.sentence(templates, topic, nouns)
            if numbered:
                sentence = f"{len(parts) + 1}. {sentence}"
            parts.append(sentence)
            size += len(sentence) + 1
        return ("\n" if numbered else " ").join(parts)

    def pairs(self, count: int, budget: int, topic_index: int | None = None) -> list[dict[str, Any]]:
        """``count`` user/assistant pairs on one topic, about ``budget`` characters in all (0 = one sentence each)."""
        topic, nouns = _TOPICS[self.rng.randrange(len(_TOPICS)) if topic_index is None else topic_index]
        pair_budget = budget // max(count, 1)
        turns = []
        for _ in range(count):
            turns.append({"role": "user", "content": self.text("user", topic, nouns, pair_budget // 5)})
            turns.append({"role": "assistant", "content": self.text("assistant", topic, nouns, pair_budget * 4 // 5)})
        return turns


# ------------------------------------------------------------------------------------------- planted facts
# Pools of fact values. None of them occurs in the filler vocabulary above (tests check it on generated data).

_PET_KINDS = _words("pet_kinds")
_PET_NAMES = _words("pet_names")
_DEGREES = _words("degrees")
_SCHOOLS = _words("schools")
_TRANSPORT = _words("transport")
_ITEMS = _words("items")
_STORES = _words("stores")
_RELATIVES = _words("relatives")
_PEOPLE = _words("people")
_RARE_JOBS = _words("rare_jobs")
_PLACE_KINDS = _words("place_kinds")
_TRAVEL_CITIES = _words("travel_cities")
_VENUES = _words("venues")
_ORDINALS = _words("ordinals")
_DISHES = _words("dishes")
_GENRES = _words("genres")
_TITLES = _words("titles")
_AUTHORS = _words("authors")
_CAMERAS = _words("cameras")
_PHOTO_STYLES = _words("photo_styles")
_DIETS = _words("diets")
_INSTRUMENTS = _words("instruments")
_GROUP_VENUES = _words("group_venues")
_HOME_CITIES = _words("home_cities")
_COMPANIES = _words("companies")
_OPENERS = _words("openers")
#: (plural noun for the question, question verb phrase, one-item sentence, two-item sentence, items)
_MS_CATEGORIES: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = tuple(
    (plural, verb, one, two, tuple(items)) for plural, verb, one, two, items in _WORDS["ms_categories"]
)
#: (key phrase, statement made on the day, clause for the question)
_EVENTS: tuple[tuple[str, str, str], ...] = tuple(tuple(event) for event in _WORDS["events"])



@dataclass
class _Evidence:
    """One planted evidence session before padding: its turns (with has_answer) and its date."""

    turns: list[dict[str, Any]]
    date: datetime


@dataclass
class _Plan:
    question: str
    answer: str | int
    facts: tuple[str, ...]
    evidence: list[_Evidence] = field(default_factory=list)


def _user_fact(rng: random.Random, statement: str, request: str, has_answer: bool = True) -> list[dict[str, Any]]:
    """A planted pair: the user states the fact (evidence), the assistant replies (not evidence)."""
    return [
        {"role": "user", "content": f"{rng.choice(_OPENERS)} {statement} {request}", "has_answer": has_answer},
        {"role": "assistant", "content": "", "has_answer": False},  # filled with on-topic filler later
    ]


class _Dates:
    """Random session moments within ``span`` days before the question date (minute resolution)."""

    def __init__(self, rng: random.Random, question_date: datetime, span_days: int) -> None:
        self.rng = rng
        self.end = question_date - timedelta(hours=1)
        self.start = question_date - timedelta(days=span_days)

    def between(self, start: datetime, end: datetime) -> datetime:
        minutes = max(int((end - start).total_seconds() // 60), 0)
        return start + timedelta(minutes=self.rng.randint(0, minutes))

    def any(self) -> datetime:
        return self.between(self.start, self.end)

    def days_before(self, days: int) -> datetime:
        """A moment on the calendar day ``days`` before the question date (before its time when days == 0)."""
        day = (self.end + timedelta(hours=1)).replace(hour=0, minute=0) - timedelta(days=days)
        return self.between(day + timedelta(hours=7), day + timedelta(hours=22))

    def ordered(self, count: int, min_gap_days: int) -> list[datetime]:
        span = (self.end - self.start).days
        slot = span // count
        moments = []
        for i in range(count):
            lo = self.start + timedelta(days=i * slot)
            hi = lo + timedelta(days=max(slot - min_gap_days, 1))
            moments.append(self.between(lo, min(hi, self.end)))
        return moments


def _plan_ssu(rng: random.Random, variant: int, dates: _Dates) -> _Plan:
    kind = variant % 5
    if kind == 0:
        degree, school = rng.choice(_DEGREES), rng.choice(_SCHOOLS)
        statement = f"I graduated with a degree in {degree} from {school}, and I'm thinking about a refresher course."
        plan = _Plan("What degree did I graduate with?", degree, (degree,))
        request = "Can you suggest how to structure evening study time?"
    elif kind == 1:
        pet_kind, name = rng.choice(_PET_KINDS), rng.choice(_PET_NAMES)
        statement = f"My {pet_kind} {name} has been restless in the evenings lately."
        plan = _Plan(f"What is the name of my {pet_kind}?", name, (name,))
        request = "Any ideas for keeping a pet entertained indoors?"
    elif kind == 2:
        minutes, how = rng.choice((25, 35, 40, 45, 50, 55, 70, 75)), rng.choice(_TRANSPORT)
        answer = f"{minutes} minutes each way"
        statement = f"My commute to the office takes {answer} {how}."
        plan = _Plan("How long is my commute to the office?", answer, (answer,))
        request = "What could I listen to or learn during that time?"
    elif kind == 3:
        item, store = rng.choice(_ITEMS), rng.choice(_STORES)
        statement = f"I bought my {item} at {store} last month and I'm still figuring out the settings."
        plan = _Plan(f"Where did I buy my {item}?", store, (store,))
        request = "How do I keep a new gadget in good shape?"
    else:
        relative, name, job = rng.choice(_RELATIVES), rng.choice(_PEOPLE), rng.choice(_RARE_JOBS)
        statement = f"My {relative} {name} works as a {job}, and I want to get a thoughtful birthday gift."
        plan = _Plan(f"What does my {relative} do for a living?", job, (job,))
        request = "What makes a gift feel personal?"
    plan.evidence.append(_Evidence(_user_fact(rng, statement, request), dates.any()))
    return plan


def _plan_ssa(rng: random.Random, variant: int, dates: _Dates) -> _Plan:
    kind = variant % 3
    if kind == 0:
        place, city = rng.choice(_PLACE_KINDS), rng.choice(_TRAVEL_CITIES)
        names = rng.sample(_VENUES, 4)
        position = rng.randrange(4)
        listing = "; ".join(f"{i + 1}. {name}" for i, name in enumerate(names))
        request = f"I'm visiting {city} soon. Can you recommend a few {place} there?"
        reply = f"Here are some {place} in {city} that are worth a visit: {listing}. Each one is easy to reach."
        question = (f"I'm looking back at our chat about {place} in {city}. "
                    f"What was the {_ORDINALS[position]} place you recommended?")
        plan = _Plan(question, names[position], (names[position],))
    elif kind == 1:
        dish, temp, minutes = rng.choice(_DISHES), rng.choice((350, 375, 400, 425, 450)), rng.randint(3, 11) * 5
        answer = f"{temp} degrees Fahrenheit"
        request = f"I want to make {dish} for friends on Saturday. How should I bake it?"
        reply = f"For the {dish}, preheat the oven to {answer} and bake it for about {minutes} minutes."
        plan = _Plan(f"In our earlier chat, what oven temperature did you suggest for my {dish}?", answer, (answer,))
    else:
        genre, title, author = rng.choice(_GENRES), rng.choice(_TITLES), rng.choice(_AUTHORS)
        request = f"Can you recommend a {genre} novel for my holiday?"
        reply = f"You might enjoy '{title}' by {author}; it is a {genre} novel with a memorable narrator."
        plan = _Plan(f"Who was the author of the {genre} novel you recommended to me?", author, (author,))
    turns = [
        {"role": "user", "content": f"{rng.choice(_OPENERS)} {request}", "has_answer": False},
        {"role": "assistant", "content": reply, "has_answer": True},
    ]
    plan.evidence.append(_Evidence(turns, dates.any()))
    return plan


def _plan_ssp(rng: random.Random, variant: int, dates: _Dates) -> _Plan:
    kind = variant % 3
    if kind == 0:
        camera, style = rng.choice(_CAMERAS), rng.choice(_PHOTO_STYLES)
        statement = f"I've been shooting a lot of {style} photography with my {camera} on weekend walks."
        question = "Can you suggest some accessories that would complement my current photography setup?"
        answer = (f"The user would prefer responses that suggest accessories compatible with their {camera} and "
                  f"suited to {style} photography. They might not prefer suggestions for other camera systems "
                  "or generic gear unrelated to their setup.")
        facts: tuple[str, ...] = (camera,)
        request = "How do I keep my shots sharp in low light?"
    elif kind == 1:
        diet = rng.choice(_DIETS)
        statement = f"I switched to a {diet} diet a few months ago and I cook most evenings after work."
        question = "Can you suggest a dinner recipe for this weekend?"
        answer = (f"The user would prefer responses that suggest dinner recipes fitting a {diet} diet and practical "
                  f"for an evening cook. They might not prefer recipes that conflict with a {diet} diet.")
        facts = (diet,)
        request = "How can I make weeknight cooking less tiring?"
    else:
        instrument, venue = rng.choice(_INSTRUMENTS), rng.choice(_GROUP_VENUES)
        statement = f"I've been learning the {instrument} for about a year and I play with a group at {venue}."
        question = "Can you recommend some new pieces I could practise?"
        answer = (f"The user would prefer responses that recommend pieces suited to an intermediate {instrument} "
                  f"player, ideally ones they could play with their group at {venue}. They might not prefer "
                  "pieces written for other instruments.")
        facts = (instrument, venue)
        request = "How should I structure a practice session?"
    plan = _Plan(question, answer, facts)
    plan.evidence.append(_Evidence(_user_fact(rng, statement, request), dates.any()))
    return plan


def _plan_ms(rng: random.Random, variant: int, dates: _Dates) -> _Plan:
    noun, verb, one, two, pool = _MS_CATEGORIES[variant % len(_MS_CATEGORIES)]
    sessions = rng.randint(2, 3)
    counts = [rng.randint(1, 2) for _ in range(sessions)]
    items = rng.sample(pool, sum(counts))
    plan = _Plan(f"How many different {noun} {verb}?", len(items), tuple(items))
    taken = 0
    for count in counts:
        chosen = items[taken:taken + count]
        taken += count
        statement = (one if count == 1 else two).format(*chosen)
        plan.evidence.append(_Evidence(_user_fact(rng, statement, "Can you help me plan my next free weekend?"),
                                       dates.any()))
    return plan


def _plan_ku(rng: random.Random, variant: int, dates: _Dates) -> _Plan:
    kind = variant % 4
    if kind == 0:
        old_s, new_s = sorted(rng.sample(range(24 * 60, 31 * 60), 2), reverse=True)
        old, new = f"{old_s // 60}:{old_s % 60:02d}", f"{new_s // 60}:{new_s % 60:02d}"
        first = f"My personal best in the 5k is {old} at the moment, and I'm hoping to improve it."
        second = f"Great news: I set a new 5k personal best of {new} at the parkrun this morning!"
        plan = _Plan("What is my current personal best time in the 5k?", new, (new, old))
    elif kind == 1:
        old, new = rng.sample(_HOME_CITIES, 2)
        first = f"I just moved to {old} for a new job, so I'm still learning my way around."
        second = f"Update: I relocated to {new} last week, and the apartment is finally unpacked."
        plan = _Plan("Which city do I live in now?", new, (new, old))
    elif kind == 2:
        old, new = rng.sample(_COMPANIES, 2)
        first = f"I started working at {old} this spring as part of their operations team."
        second = f"I accepted an offer from {new} and started there on Monday."
        plan = _Plan("Which company do I work for now?", new, (new, old))
    else:
        old_n = rng.randint(4, 9)
        new_n = old_n + rng.randint(2, 6)
        first = f"I have {old_n} houseplants on my windowsills right now."
        second = f"After the spring plant market I now have {new_n} houseplants in the flat."
        plan = _Plan("How many houseplants do I have now?", new_n,
                     (f"{new_n} houseplants", f"{old_n} houseplants"))
    old_date, new_date = dates.ordered(2, min_gap_days=5)
    plan.evidence.append(_Evidence(_user_fact(rng, first, "What should I focus on next?"), old_date))
    plan.evidence.append(_Evidence(_user_fact(rng, second, "Any advice for the coming weeks?"), new_date))
    return plan


def _tolerant_days(days: int) -> str:
    return f"{days} days. {days + 1} days (including the last day) is also acceptable."


def _plan_tr(rng: random.Random, variant: int, dates: _Dates) -> _Plan:
    span = (dates.end - dates.start).days
    if variant % 2 == 0:
        (key1, said1, clause1), (key2, said2, clause2) = rng.sample(_EVENTS, 2)
        gap = rng.randint(4, max(5, min(40, span - 3)))
        ago2 = rng.randint(1, max(1, span - gap - 1))
        first, second = dates.days_before(ago2 + gap), dates.days_before(ago2)
        days = (second.date() - first.date()).days
        plan = _Plan(f"How many days passed between the day {clause1} and the day {clause2}?",
                     _tolerant_days(days), (key1, key2))
        plan.evidence.append(_Evidence(_user_fact(rng, f"{said1}!", "What should I do to make the most of it?"),
                                       first))
        plan.evidence.append(_Evidence(_user_fact(rng, f"{said2}!", "Any tips for the next step?"), second))
    else:
        key, said, clause = rng.choice(_EVENTS)
        ago = rng.randint(3, max(4, min(60, span - 1)))
        moment = dates.days_before(ago)
        plan = _Plan(f"How many days have passed since the day {clause}?", _tolerant_days(ago), (key,))
        plan.evidence.append(_Evidence(_user_fact(rng, f"{said}!", "How should I celebrate?"), moment))
    return plan


def _plan_abstention(rng: random.Random, variant: int, dates: _Dates, base: str) -> _Plan:
    not_enough = "The information provided is not enough."
    if base == "multi-session":
        (noun, _, _, two, pool), (other, other_verb, *_) = rng.sample(_MS_CATEGORIES, 2)
        items = rng.sample(pool, 2)
        statement = two.format(*items)
        plan = _Plan(f"How many different {other} {other_verb}?",
                     f"{not_enough} You mentioned {noun} ({items[0]} and {items[1]}) but no {other}.", tuple(items))
    elif base == "single-session-user":
        pet_kind, other_kind = rng.sample(_PET_KINDS, 2)
        name = rng.choice(_PET_NAMES)
        statement = f"My {pet_kind} {name} has been restless in the evenings lately."
        plan = _Plan(f"What is the name of my {other_kind}?",
                     f"{not_enough} You mentioned your {pet_kind} {name} but not a {other_kind}.", (name,))
    elif base == "knowledge-update":
        relative, other = rng.sample(_RELATIVES, 2)
        name, city = rng.choice(_PEOPLE), rng.choice(_HOME_CITIES)
        statement = f"My {relative} {name} just moved to {city} and loves the new neighbourhood."
        plan = _Plan(f"Which city does my {other} live in now?",
                     f"{not_enough} You mentioned that your {relative} moved to {city}, but not where your "
                     f"{other} lives.", (city,))
    else:
        (key1, said1, clause1), (key2, _, clause2) = rng.sample(_EVENTS, 2)
        statement = f"{said1}!"
        plan = _Plan(f"How many days passed between the day {clause1} and the day {clause2}?",
                     f"{not_enough} You mentioned the {key1} but never the {key2}.", (key1,))
    plan.evidence.append(_Evidence(_user_fact(rng, statement, "What do you think?"), dates.any()))
    return plan


_PLANNERS: dict[str, Callable[[random.Random, int, _Dates], _Plan]] = {
    "single-session-user": _plan_ssu,
    "single-session-assistant": _plan_ssa,
    "single-session-preference": _plan_ssp,
    "multi-session": _plan_ms,
    "knowledge-update": _plan_ku,
    "temporal-reasoning": _plan_tr,
}


# ------------------------------------------------------------------------------------------------- records


def _hex8(rng: random.Random) -> str:
    return f"{rng.getrandbits(32):08x}"


def _filler_id(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.3:
        token = "".join(rng.choices(string.ascii_letters + string.digits, k=7))
        return f"sharegpt_{token}_{rng.randint(0, 5)}"
    if roll < 0.55:
        return f"ultrachat_{rng.randint(1, 999_999)}"
    return f"{_hex8(rng)}_{rng.randint(1, 4)}"


def _budgets(rng: random.Random, total: int, count: int) -> list[int]:
    weights = [rng.uniform(0.6, 1.4) for _ in range(count)]
    scale = total / sum(weights)
    return [int(w * scale) for w in weights]


def _build(kind: str, index: int, seed: int, size: SynthSize, oracle: bool) -> SynthQuestion:
    rng = random.Random(f"om-eval-synth:{seed}:{kind}:{index}")
    abstention = kind == "abstention"
    qtype = ABSTENTION_TYPES[index % len(ABSTENTION_TYPES)] if abstention else kind
    qid = _hex8(rng)
    if qtype in ("multi-session", "temporal-reasoning") and rng.random() < 0.4:
        qid = f"gpt4_{qid}"
    if abstention:
        qid += "_abs"
    question_date = datetime(2023, 1, 1) + timedelta(days=rng.randint(150, 360), minutes=rng.randrange(24 * 60))
    dates = _Dates(rng, question_date, size.span_days)
    if abstention:
        plan = _plan_abstention(rng, index, dates, qtype)
    else:
        plan = _PLANNERS[qtype](rng, index, dates)
    filler = _Filler(rng)
    evidence_hex = _hex8(rng)

    total_sessions = rng.randint(*size.sessions)
    n_evidence = len(plan.evidence)
    n_filler = 0 if oracle else max(total_sessions - n_evidence, 2)  # at least one distinct + its duplicate
    budgets = _budgets(rng, int(size.tokens * CHARS_PER_TOKEN), n_evidence + n_filler) if size.tokens else None

    sessions: list[tuple[datetime, str, list[dict[str, Any]]]] = []
    evidence_ids = []
    for number, item in enumerate(plan.evidence, 1):
        sid = f"answer_{evidence_hex}_abs" if abstention else f"answer_{evidence_hex}_{number}"
        evidence_ids.append(sid)
        budget = budgets[number - 1] if budgets else 0
        pairs = rng.randint(*size.pairs)
        topic_index = rng.randrange(len(_TOPICS))
        topic, nouns = _TOPICS[topic_index]
        planted = [dict(turn) for turn in item.turns]
        for turn in planted:
            if not turn["content"]:
                turn["content"] = filler.text(turn["role"], topic, nouns, budget * 4 // (5 * pairs) if budget else 0)
        padding = filler.pairs(pairs - 1, budget * (pairs - 1) // pairs, topic_index) if pairs > 1 else []
        for turn in padding:
            turn["has_answer"] = False
        at = rng.randint(0, pairs - 1) * 2
        sessions.append((item.date, sid, padding[:at] + planted + padding[at:]))

    used = set(evidence_ids)
    distinct = []
    for slot in range(n_filler - 1):
        sid = _filler_id(rng)
        while sid in used:
            sid = _filler_id(rng)
        used.add(sid)
        budget = budgets[n_evidence + slot] if budgets else 0
        turns = filler.pairs(rng.randint(*size.pairs), budget)
        distinct.append((sid, turns))
        sessions.append((dates.any(), sid, turns))
    if distinct:
        sid, turns = rng.choice(distinct)  # the repeated id of upstream issue #54: same content, another date
        sessions.append((dates.any(), sid, [dict(t) for t in turns]))

    if oracle:
        order = list(range(len(sessions)))
        rng.shuffle(order)
        if len(order) > 1 and order == sorted(order, key=lambda i: sessions[i][0]):
            order.reverse()
        sessions = [sessions[i] for i in order]
    else:
        sessions.sort(key=lambda s: s[0])  # stable: equal dates keep generation order
    record = {
        "question_id": qid,
        "question_type": qtype,
        "question": plan.question,
        "answer": plan.answer,
        "question_date": format_lme_date(question_date),
        "haystack_session_ids": [s[1] for s in sessions],
        "haystack_dates": [format_lme_date(s[0]) for s in sessions],
        "haystack_sessions": [s[2] for s in sessions],
        "answer_session_ids": evidence_ids,
    }
    return SynthQuestion(record, plan.facts)


def _size(size: str | SynthSize) -> SynthSize:
    if isinstance(size, SynthSize):
        return size
    try:
        return SIZES[size]
    except KeyError:
        raise ValueError(f"size {size!r} is unknown: use one of {', '.join(SIZES)} or a SynthSize") from None


def iter_generate(
    *,
    size: Literal["mini", "small", "s", "m"] | SynthSize = "mini",
    questions_per_type: int = 1,
    abstention: int | None = None,
    seed: int = 0,
    oracle: bool = False,
) -> Iterator[SynthQuestion]:
    """Like :func:`generate_with_facts`, one record at a time (for M-sized sets: pass it to :func:`write_dataset`)."""
    spec = _size(size)
    if questions_per_type < 0:
        raise ValueError(f"questions_per_type={questions_per_type!r} is invalid: must be >= 0")
    if abstention is None:
        abstention = max(1, round(0.06 * questions_per_type * len(QUESTION_TYPES))) if questions_per_type else 0
    if abstention < 0:
        raise ValueError(f"abstention={abstention!r} is invalid: must be >= 0")
    return _iter_built(spec, questions_per_type, abstention, seed, oracle)


def _iter_built(spec: SynthSize, per_type: int, abstention: int, seed: int, oracle: bool) -> Iterator[SynthQuestion]:
    order = [(kind, i) for kind in QUESTION_TYPES for i in range(per_type)]
    order += [("abstention", i) for i in range(abstention)]
    seen: set[str] = set()
    for kind, i in order:
        item = _build(kind, i, seed, spec, oracle)
        qid = item.record["question_id"]
        if qid in seen:  # 32-bit ids: a collision needs thousands of questions; make it loud, not silent
            raise RuntimeError(f"synthetic question id {qid!r} repeated; choose another seed")
        seen.add(qid)
        yield item


def generate_with_facts(
    *,
    size: Literal["mini", "small", "s", "m"] | SynthSize = "mini",
    questions_per_type: int = 1,
    abstention: int | None = None,
    seed: int = 0,
    oracle: bool = False,
) -> list[SynthQuestion]:
    """Like :func:`generate`, with the planted fact strings of each record."""
    return list(iter_generate(size=size, questions_per_type=questions_per_type, abstention=abstention, seed=seed,
                              oracle=oracle))


def generate(
    *,
    size: Literal["mini", "small", "s", "m"] | SynthSize = "mini",
    questions_per_type: int = 1,
    abstention: int | None = None,
    seed: int = 0,
    oracle: bool = False,
) -> list[dict[str, Any]]:
    """Generate raw LongMemEval records: ``questions_per_type`` per type, then ``abstention`` ``_abs`` records.

    Args:
        size: ``mini`` (a few one-pair sessions per question), ``small`` (about 12 sessions, 12k tokens), ``s``
            (about 48 sessions, 115k o200k tokens, like LongMemEval_S), ``m`` (about 500 sessions, 1.5M tokens,
            like LongMemEval_M: write those with ``write_dataset(iter_generate(...))``, not in memory) or a custom
            :class:`SynthSize`.
        questions_per_type: answerable questions of each of the six types.
        abstention: ``_abs`` questions (base types cycle MS, SSU, KU, TR); default 6 % of the answerable ones,
            at least one.
        seed: the same seed and arguments give identical records.
        oracle: keep only the evidence sessions, in a shuffled (not date-sorted) order, like the oracle file.
    """
    return [item.record for item in iter_generate(
        size=size, questions_per_type=questions_per_type, abstention=abstention, seed=seed, oracle=oracle)]


def write_dataset(records: Iterable[dict[str, Any] | SynthQuestion], path: str | os.PathLike[str]) -> Path:
    """Write records as one JSON array, one record per line (valid JSON, readable diffs, deterministic bytes).

    Records are written one at a time as they come (an iterator is never held whole), to a temporary file that
    replaces ``path`` only once complete, so a killed generation never leaves a truncated dataset behind.
    """
    target = Path(path)
    count = 0
    with atomic_writer(target) as handle:
        for record in records:
            if isinstance(record, SynthQuestion):
                record = record.record
            handle.write(("[\n" if count == 0 else ",\n") + json.dumps(record))
            count += 1
        handle.write("\n]\n" if count else "[]\n")
    return target


def mini_fixture_path() -> Path:
    """The packaged mini set (``generate(size="mini", seed=0)``), for the demo and tests."""
    from importlib.resources import files

    return Path(str(files("om_eval.data.fixtures") / "longmemeval_mini.json"))
