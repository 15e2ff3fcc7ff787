"""Print the hashes om_eval/om/exact/pins.py pins for each @mastra/memory release, rendering each pack afresh.

Run after a change to the renderer (which changes what a pack holds, so its pinned hash) or to pin a new release
(add its version, integrity and builders record first; `npm view @mastra/memory@<version> dist.integrity` prints
the integrity). Needs Node, and the registry unless the tarballs are already in the cache.

    python scripts/mastra_prompt_pins.py               # every pinned release
    python scripts/mastra_prompt_pins.py 1.10.0        # one
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from om_eval.om.exact.cache import pack_digest, pack_store
from om_eval.om.exact.fetch import files_digest, obtain_package
from om_eval.om.exact.node import BuilderProcess
from om_eval.om.exact.pins import RELEASES
from om_eval.om.exact.render import render_pack


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("versions", nargs="*", default=list(RELEASES), help="releases to hash (default: all)")
    parser.add_argument("--cache-dir", help="cache base (default: $OM_EVAL_CACHE_DIR or the XDG cache)")
    args = parser.parse_args()
    for version in args.versions:
        started = time.monotonic()
        release = dataclasses.replace(RELEASES[version], pack_sha256=None)
        root = obtain_package(release, pack_store(args.cache_dir))
        with BuilderProcess(root, release.variants) as builders:
            pack = render_pack(builders, release)
        print(f"{version}: integrity={release.integrity}")
        print(f"{' ' * len(version)}  files_sha256={files_digest(root)}")
        print(f"{' ' * len(version)}  pack_sha256={pack_digest(pack)}  ({time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    main()
