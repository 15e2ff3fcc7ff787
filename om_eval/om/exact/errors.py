"""What can go wrong when om-eval obtains and renders Mastra's own prompts: each a one-line, actionable message."""

from __future__ import annotations


class PackError(RuntimeError):
    """The prompt pack of a Mastra release cannot be had."""


class IntegrityError(PackError):
    """A tarball or folder is not the release om-eval pins (tampered, truncated, or another version)."""


class UnsafeArchiveError(PackError):
    """A tarball member would land outside its folder, or is a link or a device."""


class NodeMissingError(PackError):
    """Rendering needs Node and there is none (and no pack in the cache)."""


class RenderError(PackError):
    """Node ran, but the package's builders did not give what om-eval expects of them."""
