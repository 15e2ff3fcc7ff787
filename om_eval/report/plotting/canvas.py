"""Drawing and saving figures so that the same figure gives the same bytes, in PNG, PDF or SVG.

Each figure is drawn on a fresh ``Figure`` with an Agg canvas attached (no pyplot, no global backend switch, no
figure registry), under matplotlib's default style plus :data:`RC` (so a user's ``matplotlibrc`` cannot change
the output), at a fixed size. Saving drops every stamp that changes from one run to the next or from one
matplotlib to the next: the software and date entries of each format's metadata, and SVG's random ids (a fixed
``svg.hashsalt``).

**One font, every glyph present.** Text is set in DejaVu Sans only (bundled with matplotlib, so the same on every
machine; no fallback to whatever fonts a system has). Run labels can hold characters that font lacks (an emoji in
a label is enough), which matplotlib would draw as boxes with a warning: :func:`safe_text` spells them out
(``🔴`` becomes ``[large red circle]``) and escapes ``$``, which would otherwise start mathtext.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = ["DPI", "FORMATS", "empty", "figure_bytes", "format_of", "new_figure", "safe_text", "style"]

#: The default resolution (dots per inch) of PNGs (and of any raster part of a PDF or SVG).
DPI = 100
FORMATS = ("png", "pdf", "svg")
FONT = "DejaVu Sans"
RC: dict[RcKeyType, Any] = {
    "font.family": [FONT],
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "path.simplify": True,
    "pdf.fonttype": 42,  # TrueType, not Type 3: what publishers' checks ask for
    "svg.fonttype": "path",  # text as outlines: the figure looks the same without the font installed
    "svg.hashsalt": "om-eval",  # element ids from a fixed salt, not a random one
}
#: Metadata entries set to ``None`` are left out: no software version, no date.
_METADATA: dict[str, dict[str, None]] = {
    "png": {"Software": None},
    "pdf": {"Creator": None, "Producer": None, "CreationDate": None},
    "svg": {"Creator": None, "Date": None},
}
#: Invisible characters that select a glyph's presentation (emoji or text): dropped, not spelled out.
_SELECTORS = {"\ufe0e", "\ufe0f", "\u200d"}


@contextlib.contextmanager
def style() -> Iterator[None]:
    """Matplotlib's default style plus :data:`RC`, whatever the user's rc says."""
    import matplotlib
    import matplotlib.style

    with matplotlib.style.context("default"), matplotlib.rc_context(RC):
        yield


def new_figure(draw: Callable[[Any], None], size: tuple[float, float]) -> Any:
    """A ``Figure`` of ``size`` inches with an Agg canvas, drawn by ``draw(figure)`` under :func:`style`."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with style():
        figure = Figure(figsize=size, dpi=DPI, layout="constrained")
        FigureCanvasAgg(figure)
        draw(figure)
    return figure


def empty(axes: Any, text: str = "no runs to plot") -> None:
    """Say in the middle of ``axes`` why it holds nothing."""
    axes.text(0.5, 0.5, text, ha="center", va="center", transform=axes.transAxes, color="#555555")


def format_of(path: str | os.PathLike[str]) -> str:
    """``png``, ``pdf`` or ``svg``, from a file name's suffix.

    Raises:
        ValueError: for any other suffix.
    """
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise ValueError(f"{os.fspath(path)!r}: a figure is written as {', '.join('.' + f for f in FORMATS)}")
    return suffix


def figure_bytes(figure: Any, fmt: str = "png", dpi: int = DPI) -> bytes:
    """The figure in ``fmt`` (``png``, ``pdf``, ``svg``), the same bytes for the same figure and options."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: use one of {', '.join(FORMATS)}")
    with style():  # some settings (path simplification, hatch width, fonts, id salt) are read when saving
        buffer = io.BytesIO()
        figure.savefig(buffer, format=fmt, dpi=dpi, metadata=_METADATA[fmt])
    return buffer.getvalue()


@functools.cache
def _glyphs() -> frozenset[int]:
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    path = font_manager.findfont(font_manager.FontProperties(family=FONT), fallback_to_default=False)
    return frozenset(FT2Font(path).get_charmap())


def safe_text(text: str) -> str:
    """``text`` as matplotlib should be given it: characters DejaVu Sans lacks spelled out, ``$`` escaped.

    >>> safe_text("run 🔴 at $0")
    'run [large red circle] at \\\\$0'
    """
    glyphs = _glyphs()
    out = []
    for char in text:
        if char in _SELECTORS:
            continue
        if char == "$":
            out.append("\\$")
        elif char in "\n\t" or ord(char) in glyphs:
            out.append(char)
        else:
            out.append(f"[{unicodedata.name(char, f'U+{ord(char):04X}').lower()}]")
    return "".join(out)
