"""Mastra's own prompts, rendered from the published ``@mastra/memory`` package (``prompt=mastra_exact``).

:func:`load_pack` returns a :class:`PromptPack` whose methods mirror the package's prompt builders. The package is
fetched from the npm registry (or ``source``), checked against the hashes pinned in :mod:`om_eval.om.exact.pins`,
rendered once under Node and cached; om-eval's repository holds none of its text.
"""

from om_eval.om.exact.errors import IntegrityError, NodeMissingError, PackError, RenderError, UnsafeArchiveError
from om_eval.om.exact.pack import PromptPack, load_pack
from om_eval.om.exact.pins import RELEASES, Release, UnknownReleaseError

__all__ = [
    "RELEASES",
    "IntegrityError",
    "NodeMissingError",
    "PackError",
    "PromptPack",
    "Release",
    "RenderError",
    "UnknownReleaseError",
    "UnsafeArchiveError",
    "load_pack",
]
