"""Small files in LoCoMo's format, written by tests (the real file is never shipped): conversations of a few
dated sessions between two people, with questions of all five categories pointing at their evidence turns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_FACTS = [
    ("adopted a grey cat called Pixel", "What pet did {a} adopt?", "a grey cat called Pixel"),
    ("started evening classes in pottery", "Which classes did {a} start?", "pottery"),
    ("moved to a flat near the harbour", "Where did {a} move?", "a flat near the harbour"),
    ("ran a half marathon in the rain", "What race did {a} run?", "a half marathon"),
]


def conversation(index: int, sessions: int = 3) -> dict[str, Any]:
    """One conversation between two people: ``sessions`` sessions of four turns, a fact per session."""
    a, b = f"Ada{index}", f"Bo{index}"
    talk: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
    qa = []
    for number in range(1, sessions + 1):
        fact, question, answer = _FACTS[(number - 1) % len(_FACTS)]
        talk[f"session_{number}_date_time"] = f"{number + 1}:15 pm on {number + 2} May, 2023"
        talk[f"session_{number}"] = [
            {"speaker": a, "dia_id": f"D{number}:1", "text": f"Guess what, I {fact}!"},
            {"speaker": b, "dia_id": f"D{number}:2", "text": "That is great news, tell me more."},
            {"speaker": a, "dia_id": f"D{number}:3", "text": "It was the best part of my week.",
             "blip_caption": "a photo of a sunny street"},
            {"speaker": b, "dia_id": f"D{number}:4", "text": "I am happy for you."},
        ]
        qa.append({"question": question.format(a=a), "answer": answer, "evidence": [f"D{number}:1"],
                   "category": 4})
    qa += [
        {"question": f"When did {a} share a photo first?", "answer": "3 May 2023", "evidence": ["D1:3"],
         "category": 2},
        {"question": f"What did {a} do in May?", "answer": "adopted a cat, started pottery",
         "evidence": ["D1:1; D2:1"], "category": 1},
        {"question": f"Would {a} enjoy a craft fair?", "answer": "Likely yes; she does pottery",
         "evidence": ["D:2:1"], "category": 3},
        {"question": f"What pet did {b} adopt?", "adversarial_answer": "a grey cat called Pixel",
         "evidence": ["D1:1"], "category": 5},
    ]
    return {"sample_id": f"conv-{index}", "conversation": talk, "qa": qa}


def write_locomo_shaped(folder: Path, conversations: int = 2, sessions: int = 3) -> Path:
    """A LoCoMo-shaped file of ``conversations`` conversations (not named ``locomo10.json``: no pinned hash)."""
    path = folder / "locomo_shaped.json"
    path.write_text(json.dumps([conversation(i, sessions) for i in range(conversations)]), encoding="utf-8")
    return path


def write_audit(folder: Path, entries: list[dict[str, Any]]) -> Path:
    path = folder / "audit_shaped.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    return path
