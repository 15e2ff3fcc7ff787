"""Text helpers shared by the report renderers: fixed number formats and a markdown table writer.

Every number a report prints goes through these functions, so markdown, rich and plots round the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from om_eval.bench import longmemeval as LONGMEMEVAL

#: LongMemEval's column headers, tick labels and legend (defined with its benchmark, :mod:`om_eval.bench.longmemeval`).
TYPE_SHORT = LONGMEMEVAL.TYPE_SHORT
TYPE_TICK = LONGMEMEVAL.TYPE_TICK
TYPE_LEGEND = LONGMEMEVAL.BENCHMARK.legend
MISSING = "–"


def missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def pct(value: float | None) -> str:
    """A fraction as a percentage with one decimal (``0.6521`` -> ``65.2``); ``–`` when missing."""
    return MISSING if missing(value) else f"{100.0 * value:.1f}"  # type: ignore[operator]  # not None: not missing()


def signed_pct(value: float | None) -> str:
    """A difference of fractions in percentage points with its sign (``+17.1``)."""
    return MISSING if missing(value) else f"{100.0 * value:+.1f}"  # type: ignore[operator]  # not None: not missing()


def interval(ci: tuple[float, float] | None, *, signed: bool = False) -> str:
    if ci is None:
        return ""
    fmt = signed_pct if signed else pct
    return f"[{fmt(ci[0])}, {fmt(ci[1])}]"


def accuracy_cell(value: float | None, ci: tuple[float, float] | None, n: int | None = None, *,
                  sep: str = " ") -> str:
    """``65.2 [45.0, 82.6] (23)``: accuracy %, confidence interval, and n when given."""
    if missing(value):
        return MISSING if n is None else f"{MISSING}{sep}({n})"
    parts = [pct(value)]
    if ci is not None:
        parts.append(interval(ci))
    if n is not None:
        parts.append(f"({n})")
    return sep.join(parts)


def compact_interval(ci: tuple[float, float] | None) -> str:
    """An interval in whole percentage points with an en dash (``[61–83]``); empty when missing."""
    if ci is None or missing(ci[0]) or missing(ci[1]):
        return ""
    return f"[{100.0 * ci[0]:.0f}–{100.0 * ci[1]:.0f}]"


def compact_cell(value: float | None, ci: tuple[float, float] | None, n: int | None = None) -> str:
    """``72.0 [61–83] n=25``: accuracy % with one decimal, the interval in whole points, and n when given."""
    parts = [pct(value)]
    if not missing(value) and ci is not None:
        parts.append(compact_interval(ci))
    if n is not None:
        parts.append(f"n={n}")
    return " ".join(parts)


def plural(n: int, noun: str, many: str | None = None) -> str:
    """A count with its noun in agreement: ``1 answer``, ``2 answers``, ``0 answers`` (``many``: an irregular plural).

    >>> plural(1, "question"), plural(3, "question"), plural(2, "reply", "replies")
    ('1 question', '3 questions', '2 replies')
    """
    return f"{n} {noun if n == 1 else many or noun + 's'}"


def dollars(value: float | None) -> str:
    return MISSING if missing(value) else f"{value:.4f}"


def tokens(value: float | None) -> str:
    return MISSING if missing(value) else f"{value:,.0f}"


def ratio(value: float | None) -> str:
    return MISSING if missing(value) else f"{value:.1f}"


def p_value(value: float | None) -> str:
    if missing(value):
        return MISSING
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"  # type: ignore[operator]  # not None: not missing(value)


def md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> list[str]:
    """A GitHub markdown table (one line per row); ``right`` right-aligns a column."""
    out = ["| " + " | ".join(md_escape(h) for h in headers) + " |",
           "|" + "|".join("---:" if r else ":---" for r in right) + "|"]
    out += ["| " + " | ".join(md_escape(cell) for cell in row) + " |" for row in rows]
    return out


def csv_number(value: float | int | None, digits: int = 6) -> str:
    """CSV cells: fixed decimals for floats, plain integers, empty for missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"
