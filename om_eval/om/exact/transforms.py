"""What a release's Reflector prompt does to the observations before showing them, in om-eval's own code.

The renderer finds which of these a release applies by calling its builder on probe texts
(:func:`~om_eval.om.exact.render.render_pack`); the pack names it on the slot, and filling the slot applies it.
Each is a helper om-eval already checks against the package (``tests/om/test_mastra_differential.py``,
``tests/om/test_groups_differential.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from om_eval.om.anchors import inject_anchor_ids
from om_eval.om.groups import render_groups, strip_groups


def _anchored(text: str) -> str:
    """1.9-1.10: observation groups shown as sections, then an anchor id on every line that counts."""
    rendered = render_groups(text)
    return inject_anchor_ids(text if rendered is None else rendered)


#: Name -> rewrite, in the order the renderer tries them.
REFLECTION_VIEWS: Mapping[str, Callable[[str], str]] = {
    "none": lambda text: text,
    "anchored": _anchored,
    "groups_stripped": strip_groups,
}
