"""``prompt=mastra_exact``'s choice: which ``@mastra/memory`` release's own prompts a memory reads."""

from __future__ import annotations

from dataclasses import dataclass

from om_eval.om.exact import RELEASES, PromptPack, load_pack
from om_eval.om.exact.pins import PACKAGE
from om_eval.om.wording import pack_identity


@dataclass(frozen=True)
class MastraPrompts:
    """``prompt=mastra_exact``: the ``@mastra/memory`` release whose own prompts a run uses, its Observer variant,
    and where its package comes from (``None``: the npm registry, once; :func:`om_eval.om.exact.load_pack`)."""

    version: str
    variant: str = "current"
    source: str | None = None

    @property
    def identity(self) -> str:
        """What the run id and the memory key hold for these prompts (release, variant, pinned pack digest)."""
        return pack_identity(self.version, self.variant)

    def provenance(self) -> dict[str, str]:
        """What a run records of them (``runs.prompt_hashes``): package, version, variant, integrity, identity."""
        return {"om": self.identity, "package": PACKAGE, "version": self.version, "variant": self.variant,
                "integrity": RELEASES[self.version].integrity}

    def load(self) -> PromptPack:
        """The pack, from the cache, else rendered once (Node; the registry or :attr:`source`)."""
        return load_pack(self.version, self.source, variant=self.variant)
