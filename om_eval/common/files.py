"""File names made from free-form ids (question ids, run labels).

Why not the id itself: a dataset may use any characters and any length, and a file system allows neither (255
bytes per name on most). Mapping the unsafe characters alone is not enough either: ``a.b`` and ``a_b`` would share
a file. An id that is already short and safe keeps its own name, so files written before this rule still match.
"""

from __future__ import annotations

import hashlib
import re

#: Longest readable part kept from an id; the name adds a 16-character hash, well under 255 bytes with any suffix.
READABLE_CHARS = 80
_SAFE = re.compile(r"[A-Za-z0-9_-]+")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def safe_file_name(identifier: str) -> str:
    """A file name for ``identifier``: the id itself when it is short and safe, else a readable prefix + hash.

    Distinct ids always get distinct names (the hash covers the whole id); the same id always gets the same name.
    """
    if len(identifier) <= READABLE_CHARS and _SAFE.fullmatch(identifier):
        return identifier
    readable = _UNSAFE.sub("_", identifier)[:READABLE_CHARS]
    digest = hashlib.sha256(identifier.encode("utf-8")).hexdigest()[:16]
    return f"{readable}~{digest}"
