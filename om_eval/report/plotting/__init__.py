"""Drawing the figures of a summary table: colours, canvas, panels, bars, scatters and the notes file.

The public functions (figures, files, the folder ``om-eval plot`` writes) are in :mod:`om_eval.report.plots`.
"""

from om_eval.report.plotting.canvas import DPI, FORMATS, figure_bytes, format_of, safe_text
from om_eval.report.plotting.colours import PALETTE, palette, variant_color, variant_colors

__all__ = ["DPI", "FORMATS", "PALETTE", "figure_bytes", "format_of", "palette", "safe_text", "variant_color",
           "variant_colors"]
