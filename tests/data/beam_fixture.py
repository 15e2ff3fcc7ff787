"""A small BEAM tier written in BEAM's shapes, for tests (the real data is never committed): two chats of three
batches each, every ability asked twice, the evidence cited the ways upstream cites it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from om_eval.data.beam import ABILITIES

FACTS = [
    ("March-15-2024", ["My first sprint ends on March 29 and covers login.",
                       "I set up the Flask app with a SQLite database.",
                       "I never wrote any Flask routes in this project."]),
    (None, ["I added a category column to the transactions table.",
            "The dashboard API answers in about 400ms.",
            "Please always format code with syntax highlighting."]),
    ("May-02-2024", ["I added a notes column to the transactions table.",
                     "The dashboard API now answers in about 250ms after caching.",
                     "I implemented the homepage route with Flask."]),
]


def chat(prefix: str = "") -> list[dict[str, Any]]:
    batches, ident = [], 0
    for b, (anchor, facts) in enumerate(FACTS, start=1):
        turns = []
        for t, fact in enumerate(facts, start=1):
            user: dict[str, Any] = {"role": "user", "id": ident, "content": f"{prefix}{fact} ->-> {b},{t}",
                                    "index": f"{b},{t}", "question_type": "main_question"}
            if anchor and t == 1:
                user["time_anchor"] = anchor
            turns.append([user, {"role": "assistant", "id": ident + 1, "content": f"Noted: {fact.lower()}"}])
            ident += 2
        batches.append({"batch_number": b, "turns": turns, "time_anchor": None})
    return batches


def questions() -> dict[str, list[dict[str, Any]]]:
    asked: dict[str, list[dict[str, Any]]] = {}
    for ability in ABILITIES:
        entries = []
        for i in range(2):
            entry: dict[str, Any] = {"question": f"Question {i} about {ability.replace('_', ' ')}?",
                                     "difficulty": "easy", "rubric": ["LLM response should state: March 29"]}
            if ability == "event_ordering":
                entry["rubric"] = ["category column added", "notes column added"]
                entry["answer"] = "First the category column, then the notes column."
                entry["source_chat_ids"] = [[6], [12]]
            elif ability in ("knowledge_update", "contradiction_resolution"):
                entry["ideal_answer" if ability == "contradiction_resolution" else "answer"] = "about 250ms"
                entry["source_chat_ids"] = {"original_info": [8], "updated_info": [14]}
            elif ability in ("instruction_following", "preference_following"):
                entry["expected_compliance"] = "Code is shown with syntax highlighting."
                entry["source_chat_ids"] = [10]
            elif ability == "abstention":
                entry["ideal_response"] = "There is no information about this."
            else:
                entry["answer"] = "March 29"
                entry["source_chat_ids"] = [0]
            entries.append(entry)
        asked[ability] = entries
    return asked


def write_tier(root: Path, tier: str = "100K", chats: int = 2) -> Path:
    """``root/<tier>/<1..chats>/`` with ``chat.json`` and the probing questions; returns ``root``."""
    for number in range(1, chats + 1):
        folder = root / tier / str(number)
        (folder / "probing_questions").mkdir(parents=True, exist_ok=True)
        (folder / "chat.json").write_text(json.dumps(chat(f"[chat {number}] " if number > 1 else "")))
        (folder / "probing_questions" / "probing_questions.json").write_text(json.dumps(questions()))
    return root
