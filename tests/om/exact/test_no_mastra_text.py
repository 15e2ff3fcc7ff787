"""The repository holds none of Mastra's prompt text: no run of 12 words of any pinned release's rendered pack
appears in a file git tracks (or would track: new files not ignored are scanned too).

Words are compared lower-cased and without punctuation, so a copy that was re-quoted or re-escaped (TOML, JSON,
a Python string) is still found. XML tags and numbers are left out: the output format the prompts describe (tags,
dates, times) is shared by every test fixture of an Observer reply and is not prose. Skipped when a pack cannot be
rendered here (no Node, no registry).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from om_eval.om.exact import PromptPack
from om_eval.om.exact.pins import RELEASES
from om_eval.om.exact.template import text_of
from tests.om.exact.packs import real_pack

pytestmark = [pytest.mark.integration, pytest.mark.mastra]

ROOT = Path(__file__).resolve().parents[3]
SHINGLE = 12
_WORD = re.compile(r"\w+")
_TAG = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?>")
_ESCAPE = re.compile(r"\\(?:[nrt]|u[0-9a-fA-F]{4})")


def words(text: str) -> list[str]:
    plain = _TAG.sub(" ", _ESCAPE.sub(" ", text))
    return [w.lower() for w in _WORD.findall(plain) if not w.isdigit()]


def shingles(text: str) -> set[tuple[str, ...]]:
    found = words(text)
    return {tuple(found[i:i + SHINGLE]) for i in range(len(found) - SHINGLE + 1)}


def pack_texts(pack: PromptPack) -> Iterator[str]:
    yield from pack.texts.values()
    for entries in pack.templates.values():
        for entry in entries.values():
            yield from text_of(entry.parts)
            for message in entry.messages:
                yield from text_of(message)


def repository_files() -> Iterable[Path]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode("utf-8", errors="replace")
    for name in filter(None, listed.split("\0")):
        path = ROOT / name
        if path.is_file() and path.stat().st_size < 20_000_000:
            yield path


def test_no_twelve_words_of_any_pack_are_in_the_repository(tmp_path_factory: pytest.TempPathFactory) -> None:
    theirs: dict[tuple[str, ...], str] = {}
    for version, release in RELEASES.items():
        for variant in release.variants:
            for text in pack_texts(real_pack(tmp_path_factory, version, variant)):
                for shingle in shingles(text):
                    theirs.setdefault(shingle, f"{version}/{variant}")
    assert len(theirs) > 5_000  # the packs were read (a scan of nothing would pass)
    longest = max(pack_texts(real_pack(tmp_path_factory, "1.10.0")), key=len)
    assert shingles(json.dumps(longest)) <= theirs.keys()  # a re-escaped copy would be found
    hits: list[str] = []
    scanned = 0
    for path in repository_files():
        data = path.read_bytes()
        if b"\0" in data[:8000]:
            continue
        scanned += 1
        common = shingles(data.decode("utf-8", errors="replace")) & theirs.keys()
        if common:
            example = " ".join(next(iter(common)))
            hits.append(f"{path.relative_to(ROOT)}: {len(common)} runs, e.g. from {theirs[next(iter(common))]}: "
                        f"{example[:40]}...")
    print(f"\n{len(theirs)} twelve-word runs of the packs against {scanned} files: {len(hits)} files share any")
    assert not hits, "Mastra prompt text in the repository:\n" + "\n".join(hits)
