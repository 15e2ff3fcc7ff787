"""``om-eval run experiment=smoke prompt=mastra_exact`` end to end with the scripted model and the real 1.10.0 pack.

The first run reads the pack the exact tests rendered (Node once); a second run has neither Node nor the network and
reads the cache; a tampered tarball handed over as ``prompt.source`` is refused before anything is stored. Marked
``integration`` and ``mastra``: skipped, saying why, when Node or the package cannot be had.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from om_eval.bench.pipeline import unpack_messages
from om_eval.experiment.app import run_from_config
from om_eval.om.config import ConfigError
from om_eval.om.exact import fetch
from om_eval.om.exact.cache import pack_store
from om_eval.om.exact.pins import RELEASES
from om_eval.store import Catalog
from tests.om.exact.packs import cache_base, real_pack
from tests.runs import compose_run

pytestmark = [pytest.mark.integration, pytest.mark.mastra]


def finished(results: Path) -> tuple[dict, list[dict]]:
    with Catalog(results) as catalog:
        (run,) = catalog.runs()
        items = catalog.query("SELECT question_id, status, observation_tokens, actor_prompt FROM items "
                              "ORDER BY question_id")
    return run, items


def test_smoke_reads_mastras_prompts_and_a_second_run_needs_neither_node_nor_network(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    pack = real_pack(tmp_path_factory, "1.10.0")
    monkeypatch.setenv("OM_EVAL_CACHE_DIR", str(cache_base(tmp_path_factory)))
    first = tmp_path / "first"
    run_from_config(compose_run(first, "prompt=mastra_exact"))
    run, items = finished(first)
    assert '"package": "@mastra/memory"' in run["prompt_hashes"] and pack.identity in run["prompt_hashes"]
    assert len(items) == 7 and all(i["status"] == "done" and i["observation_tokens"] for i in items)
    shown = unpack_messages(items[0]["actor_prompt"]) or []
    assert {"role": "user", "content": pack.continuation_reminder()} in shown  # the release's own reminder

    monkeypatch.setattr("om_eval.om.exact.node.shutil.which", lambda name: None)
    monkeypatch.setattr(fetch, "download", lambda url, timeout=0: pytest.fail(f"the network was used: {url}"))
    second = tmp_path / "second"
    run_from_config(compose_run(second, "prompt=mastra_exact"))
    again, items_again = finished(second)
    assert again["run_id"] == run["run_id"]
    assert [i["observation_tokens"] for i in items_again] == [i["observation_tokens"] for i in items]


def test_a_tampered_package_is_refused_before_anything_is_stored(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    release = RELEASES["1.10.0"]
    real_pack(tmp_path_factory, "1.10.0")
    kept = pack_store(cache_base(tmp_path_factory)) / "tarballs" / f"{fetch.integrity_key(release.integrity)}.tgz"
    data = kept.read_bytes() if kept.is_file() else fetch.download(release.tarball_url)
    tampered = bytearray(data)
    tampered[len(tampered) // 3] ^= 0x01
    source = tmp_path / "memory-1.10.0.tgz"
    source.write_bytes(bytes(tampered))
    monkeypatch.setenv("OM_EVAL_CACHE_DIR", str(tmp_path / "empty-cache"))  # no pack cached: the source is read
    results = tmp_path / "results"
    with pytest.raises(ConfigError, match=r"prompt=mastra_exact cannot be used: .*not @mastra/memory 1\.10\.0 as "
                                          r"published"):
        run_from_config(compose_run(results, "prompt=mastra_exact", f"prompt.source={source}"))
    assert not (results / "store").exists()
