"""The real packs for the integration tests: rendered once per session (or once per ``$OM_EVAL_CACHE_DIR``).

Skips with the reason when Node is missing or the package cannot be downloaded.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from om_eval.om.exact import PackError, PromptPack, load_pack
from om_eval.om.exact.cache import pack_store
from om_eval.om.exact.fetch import obtain_package
from om_eval.om.exact.pins import RELEASES

VERSIONS = tuple(RELEASES)


def cache_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    explicit = os.environ.get("OM_EVAL_CACHE_DIR")
    return Path(explicit) if explicit else tmp_path_factory.getbasetemp() / "om-eval-cache"


def real_pack(tmp_path_factory: pytest.TempPathFactory, version: str, variant: str = "current") -> PromptPack:
    if shutil.which("node") is None:
        pytest.skip("node is needed to render Mastra's prompts")
    try:
        return load_pack(version, cache_dir=cache_base(tmp_path_factory), variant=variant)
    except PackError as error:
        pytest.skip(f"the @mastra/memory {version} pack cannot be had here: {error}")


def real_package(tmp_path_factory: pytest.TempPathFactory, version: str) -> Path:
    """The verified, unpacked package (for calling its builders directly)."""
    real_pack(tmp_path_factory, version)
    return obtain_package(RELEASES[version], pack_store(cache_base(tmp_path_factory)))
