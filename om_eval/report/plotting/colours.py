"""One colour per run: the same in every figure of a report, never shared by two runs.

A run's *preferred* colour is the sha256 of its label modulo the ten base colours (:data:`PALETTE`), so it tends to
keep its colour from one report or sweep to the next. Hashing alone lets two runs share a colour (1 chance in 10
per pair), so :func:`variant_colors` walks the labels in sorted order and gives each its preferred colour if still
free, else the next free base colour, and once all ten are taken the next colour of :func:`palette`, which grows
deterministically (tab20's light tones, then golden-ratio hues). The result depends only on the *set* of labels:
every figure drawn from one table agrees, whatever the order of its runs.
"""

from __future__ import annotations

import colorsys
import hashlib
from collections.abc import Iterable

__all__ = ["PALETTE", "palette", "variant_color", "variant_colors"]

#: Matplotlib's tab10 colours, spelled out so a matplotlib upgrade cannot change them.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
#: tab20's light tones: the next ten colours, once the base ones are taken.
LIGHT = ("#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
         "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5")
_GOLDEN = 0.6180339887498949
#: (saturation, value) of the generated colours, in turn.
_TONES = ((0.8, 0.7), (0.5, 0.9), (0.9, 0.45))


def palette(n: int) -> tuple[str, ...]:
    """At least ``n`` distinct colours: :data:`PALETTE`, :data:`LIGHT`, then hues a golden ratio apart.

    >>> palette(3) == PALETTE, len(palette(25)), len(set(palette(25)))
    (True, 25, 25)
    """
    colours = list(PALETTE + LIGHT)
    k = 0
    while len(colours) < n:
        saturation, value = _TONES[k % len(_TONES)]
        rgb = colorsys.hsv_to_rgb((k * _GOLDEN) % 1.0, saturation, value)
        colour = "#" + "".join(f"{round(255 * c):02x}" for c in rgb)
        if colour not in colours:
            colours.append(colour)
        k += 1
    return tuple(colours[:max(n, len(PALETTE))])


def variant_color(variant: str) -> str:
    """The preferred colour of a run label: sha256 of the label into :data:`PALETTE`."""
    digest = hashlib.sha256(variant.encode("utf-8")).digest()
    return PALETTE[int.from_bytes(digest[:8], "big") % len(PALETTE)]


def variant_colors(variants: Iterable[str]) -> dict[str, str]:
    """A distinct colour for each label, whatever their number; depends only on the set of labels.

    In sorted order, each label takes the first free base colour from its preferred one (:func:`variant_color`)
    on, so it keeps that colour unless a label earlier in the order already has it; past ten labels, the next
    free colour of :func:`palette`.
    """
    names = sorted(set(variants))
    extra = palette(len(names))[len(PALETTE):]
    taken: set[str] = set()
    out: dict[str, str] = {}
    for name in names:
        start = PALETTE.index(variant_color(name))
        colour = next(c for c in (*PALETTE[start:], *PALETTE[:start], *extra) if c not in taken)
        taken.add(colour)
        out[name] = colour
    return out
