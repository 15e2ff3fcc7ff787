"""Where rendered packs live, and reading them back without Node or network.

Layout under ``<cache base>/mastra-prompts/`` (the base as :func:`om_eval.common.files.cache_folder` has it):

``sha512-<hex>.json``
    a rendered pack, named by the hex of its tarball's pinned integrity hash; read by every later run.
``tarballs/<hex>.tgz``
    the verified tarball, kept so a re-render needs no network.
``packages/<hex>/package/``
    the verified, unpacked package Node renders from (with om-eval's exporting copy of its bundle).
``.lock-<hex>``
    held while a pack is rendered, so concurrent first runs render it once.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from om_eval.common.files import atomic_write, cache_folder
from om_eval.om.exact.fetch import integrity_key
from om_eval.om.exact.pins import Release

CACHE_NAME = "mastra-prompts"


def pack_store(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """``<cache_dir>/mastra-prompts``, or the default cache base's."""
    return Path(cache_dir).expanduser() / CACHE_NAME if cache_dir is not None else cache_folder(CACHE_NAME)


def pack_path(store: Path, release: Release) -> Path:
    return store / f"sha512-{integrity_key(release.integrity)}.json"


def lock_path(store: Path, release: Release) -> Path:
    return store / f".lock-{integrity_key(release.integrity)}"


def pack_digest(pack: dict[str, Any]) -> str:
    """sha256 of the pack's canonical JSON (what :attr:`~om_eval.om.exact.pins.Release.pack_sha256` pins)."""
    content = {key: pack[key] for key in ("format", "version", "integrity", "variants")}
    canonical = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def read_pack(path: Path, release: Release, pack_format: int) -> dict[str, Any] | None:
    """The pack at ``path`` if it is one of ``release`` in ``pack_format`` (and matches the pinned digest)."""
    try:
        pack = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(pack, dict) or pack.get("format") != pack_format:
        return None
    if pack.get("version") != release.version or pack.get("integrity") != release.integrity:
        return None
    if release.pack_sha256 is not None and pack_digest(pack) != release.pack_sha256:
        return None
    return pack


def write_pack(path: Path, pack: dict[str, Any]) -> None:
    atomic_write(path, json.dumps(pack, ensure_ascii=False, indent=None, separators=(",", ":")))
