"""A rendered pack is read back from the cache with neither Node nor network; without both, one line says why.

The pack here is a small one made in the test, in om-eval's own words, for a release pinned in the test.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from om_eval.om.exact import cache, fetch, load_pack, pins
from om_eval.om.exact.cache import pack_digest, pack_path, pack_store, read_pack, write_pack
from om_eval.om.exact.errors import NodeMissingError, PackError
from om_eval.om.exact.render import PACK_FORMAT
from om_eval.om.exact.template import ListSlot, Slot, to_json

FAKE = dataclasses.replace(pins.RELEASES["1.10.0"], version="0.0.2", pack_sha256=None)


def small_pack() -> dict[str, Any]:
    system = [{"shape": {"multi_thread": multi, "thread_title": title, "instruction": instruction},
               "parts": to_json(("Watch the talk" + (" of many threads" if multi else "") + ".",
                                 *((" Name it.",) if title else ()),
                                 *((" Also: ", Slot("instruction")) if instruction else ())))}
              for multi in (False, True) for title in (False, True) for instruction in (False, True)]
    lines = ListSlot("prior", "\n", {"current-task": ("- task was ", Slot("value")),
                                     "suggested-response": ("- reply was ", Slot("value"))},
                     ("current-task", "suggested-response"))
    task = []
    for previous in (False, True):
        head: tuple[Any, ...] = ("Seen so far:\n", Slot("previous_observations"), "\n\n") if previous else ()
        for prior in (False, True):
            parts = head + (("Earlier:\n", lines, "\n\n") if prior else ()) + ("Note what is new.",)
            task.append({"shape": {"previous": previous, "truncated": False, "thread_title": False,
                                   "skip_hints": False, "prior": prior}, "parts": to_json(parts)})
    return {"format": PACK_FORMAT, "version": FAKE.version, "integrity": FAKE.integrity,
            "variants": {"current": {"texts": {"continuation_hint": "Carry on.", "compression_guidance/0": "",
                                               "compression_guidance/1": "Shorter, please."},
                                     "templates": {"observer_system": system, "observer_task": task}}}}


@pytest.fixture
def fake_release(monkeypatch: pytest.MonkeyPatch) -> pins.Release:
    monkeypatch.setitem(pins.RELEASES, FAKE.version, FAKE)
    return FAKE


@pytest.fixture
def no_node_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("om_eval.om.exact.node.shutil.which", lambda name: None)

    def no_network(url: str, timeout: float = 0) -> bytes:
        raise AssertionError(f"the network was used: {url}")

    monkeypatch.setattr(fetch, "download", no_network)


def test_a_cached_pack_is_read_without_node_or_network(tmp_path: Path, fake_release: pins.Release,
                                                       no_node_no_network: None) -> None:
    write_pack(pack_path(pack_store(tmp_path), fake_release), small_pack())
    pack = load_pack(fake_release.version, cache_dir=tmp_path)
    assert pack.observer_system_prompt(multi_thread=True, instruction="be brief") == (
        "Watch the talk of many threads. Also: be brief")
    assert pack.observer_task("old notes", prior={"suggested-response": "ask back", "current-task": ""}) == (
        "Seen so far:\nold notes\n\nEarlier:\n- reply was ask back\n\nNote what is new.")
    assert pack.observer_task("", prior={"current-task": ""}) == "Note what is new."
    assert pack.compression_guidance(1) == "Shorter, please."
    assert pack.continuation_reminder() == "<system-reminder>Carry on.</system-reminder>"
    assert pack.identity == f"mastra@0.0.2/current#{pack_digest(small_pack())[:16]}"


def test_the_pack_is_keyed_by_the_integrity_hash(tmp_path: Path, fake_release: pins.Release) -> None:
    path = pack_path(pack_store(tmp_path), fake_release)
    assert path == tmp_path / "mastra-prompts" / f"sha512-{fetch.integrity_key(fake_release.integrity)}.json"


def test_without_a_pack_and_without_node_one_line_names_node(tmp_path: Path, fake_release: pins.Release,
                                                             no_node_no_network: None) -> None:
    with pytest.raises(NodeMissingError) as missing:
        load_pack(fake_release.version, cache_dir=tmp_path)
    message = str(missing.value)
    assert "Node.js" in message and "0.0.2" in message and "\n" not in message


def test_a_pack_of_another_release_or_a_damaged_one_is_not_used(tmp_path: Path, fake_release: pins.Release,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path = pack_path(pack_store(tmp_path), fake_release)
    pack = small_pack()
    write_pack(path, {**pack, "version": "0.0.3"})
    assert read_pack(path, fake_release, PACK_FORMAT) is None
    path.write_text("{not json")
    assert read_pack(path, fake_release, PACK_FORMAT) is None
    write_pack(path, pack)
    pinned = dataclasses.replace(fake_release, pack_sha256=pack_digest(pack))
    assert read_pack(path, pinned, PACK_FORMAT) == pack
    pack["variants"]["current"]["texts"]["continuation_hint"] = "Carry on, edited."
    write_pack(path, pack)
    assert read_pack(path, pinned, PACK_FORMAT) is None


def test_asking_for_what_a_release_has_not_is_an_error(tmp_path: Path, fake_release: pins.Release) -> None:
    write_pack(pack_path(pack_store(tmp_path), fake_release), small_pack())
    with pytest.raises(PackError, match="no prompt variant 'legacy'"):
        load_pack(fake_release.version, cache_dir=tmp_path, variant="legacy")
    pack = load_pack(fake_release.version, cache_dir=tmp_path)
    with pytest.raises(PackError, match="no observer_task rendered"):
        pack.observer_task("x", truncated=True)
    with pytest.raises(ValueError, match="unknown prior item"):
        pack.observer_task("x", prior={"current_task": "typo"})
    with pytest.raises(ValueError, match="compression levels"):
        pack.compression_guidance(9)


def test_the_default_store_follows_the_cache_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OM_EVAL_CACHE_DIR", str(tmp_path))
    assert cache.pack_store() == tmp_path / "mastra-prompts"
