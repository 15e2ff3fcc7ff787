"""A seeded synthetic multi-session conversation, for the demo, the engine benchmark and tests.

Each session is a run of user/assistant pairs on one day; user turns state facts about the user (pets, work,
trips, plans with relative dates) and ask questions, assistant turns answer at similar length. Message times
follow the benchmark replay convention: session start + 5 seconds per turn.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from om_eval.om.records import Message

_NAMES = ["Ana", "Bruno", "Chen", "Dara", "Emil", "Farah", "Goran", "Hana", "Ivo", "Jun", "Kofi", "Lena"]
_PETS = ["a tabby cat", "a beagle", "two goldfish", "a grey parrot", "a rescue greyhound", "a lop-eared rabbit"]
_CITIES = ["Lisbon", "Porto", "Valencia", "Ghent", "Tallinn", "Kraków", "Bologna", "Lyon", "Bergen", "Split"]
_HOBBIES = ["bouldering", "sourdough baking", "urban sketching", "trail running", "the cello", "pottery",
            "birdwatching", "chess openings", "film photography", "salsa dancing"]
_JOBS = ["data engineer", "pediatric nurse", "high-school chemistry teacher", "UX researcher",
         "civil engineer", "bakery owner", "translator", "museum archivist"]
_WHEN = ["last week", "yesterday", "two days ago", "last month", "next weekend", "tomorrow", "next month",
         "a few days ago"]
_TOPICS = ["budgeting for the trip", "a training plan", "a reading list", "meal prep ideas", "a gift idea",
           "how to fix a leaking tap", "learning Portuguese verbs", "organising the garage"]

_USER_TEMPLATES = [
    "I just got back from {city} {when} with my friend {name}, and we spent most of the time on {hobby}. "
    "It reminded me why I picked up {hobby} in the first place, even though my schedule as a {job} is packed. "
    "Can you suggest a way to keep practising {hobby} for about twenty minutes a day?",
    "Quick update: we adopted {pet} {when}, and {name} has been helping me settle it in. "
    "I'm still working as a {job}, so mornings are hectic and I need a routine that fits around shifts. "
    "What should the first month with {pet} look like?",
    "I'm planning a trip to {city} {when} and I want to combine it with {hobby}. My budget is about "
    "{amount} euros, and {name} might join for the last two days. Could you help me with {topic}?",
    "I changed jobs recently: I'm now a {job} instead of my old role, and the new team is great. "
    "{name} says I should celebrate with a weekend in {city}. I'd also like advice on {topic}.",
    "My sister {name} is visiting {when}, and she has never tried {hobby}. I booked a table for {count} "
    "people at a place near the old town. Do you think a beginner session of {hobby} is a good idea?",
]
_ASSISTANT_TEMPLATES = [
    "That sounds like a wonderful plan. For {topic}, start by listing what matters most to you, then set a "
    "small weekly goal. With {hobby}, short daily sessions beat long occasional ones: pick a fixed time, keep "
    "your gear ready the night before, and track progress in a notebook. Ask {name} to check in with you.",
    "Congratulations! Here is a simple approach: keep the first two weeks calm and predictable, set up a "
    "quiet corner, and introduce new routines gradually. For a {job}, a fifteen-minute morning block and a "
    "longer evening block usually work best. Let me know how the first days go and we can adjust.",
    "Great choice of destination. {city} is lovely in spring; book accommodation early, look for a weekly "
    "transport pass, and keep one free afternoon for something spontaneous. A budget of {amount} euros is "
    "realistic if you cook a few meals yourself and plan {hobby} sessions ahead.",
]


@dataclass(frozen=True)
class Session:
    """One session of the synthetic conversation."""

    thread_id: str
    started_at: datetime
    messages: tuple[Message, ...]


def make_conversation(
    sessions: int = 24, pairs_per_session: int = 6, *, seed: int = 7, start: datetime | None = None
) -> list[Session]:
    """Build ``sessions`` sessions of ``pairs_per_session`` user/assistant pairs (about 230 tokens a pair)."""
    rng = random.Random(seed)
    when = start or datetime(2025, 1, 6, 9, 30)
    result = []
    for index in range(sessions):
        thread_id = f"session-{index:03d}"
        turns = []
        for pair in range(pairs_per_session):
            fill = {
                "name": rng.choice(_NAMES), "pet": rng.choice(_PETS), "city": rng.choice(_CITIES),
                "hobby": rng.choice(_HOBBIES), "job": rng.choice(_JOBS), "when": rng.choice(_WHEN),
                "topic": rng.choice(_TOPICS), "amount": rng.randrange(300, 2500, 50), "count": rng.randint(2, 8),
            }
            user = " ".join(t.format(**fill) for t in rng.sample(_USER_TEMPLATES, 2))
            assistant = " ".join(t.format(**fill) for t in rng.sample(_ASSISTANT_TEMPLATES, 2))
            for offset, (role, text) in enumerate((("user", user), ("assistant", assistant))):
                turn = 2 * pair + offset
                turns.append(Message(
                    id=f"{thread_id}-m{turn:03d}", thread_id=thread_id, role=role, content=text,
                    created_at=when + timedelta(seconds=5 * turn),
                ))
        result.append(Session(thread_id, when, tuple(turns)))
        when = when + timedelta(days=rng.randint(1, 9), hours=rng.randint(-2, 3))
    return result
