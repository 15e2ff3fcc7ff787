"""Reports and plots from stored runs: summary tables, paired comparisons, deterministic PNGs.

The functions take plain rows of the store's ``runs`` and ``items`` tables (lists of dicts), not a database.
Matplotlib and rich are imported only inside the functions that draw or print.
"""

from om_eval.report.compare import (
    Comparison,
    comparison_to_markdown,
    comparison_to_rich,
    mcnemar,
    paired_comparison,
)
from om_eval.report.plots import (
    plot_accuracy_vs_context,
    plot_accuracy_vs_tokens,
    plot_categories,
    plot_cost_vs_accuracy,
    variant_color,
)
from om_eval.report.table_text import to_csv, to_markdown, to_rich
from om_eval.report.tables import ReportTable, summary_table

__all__ = [
    "Comparison",
    "ReportTable",
    "comparison_to_markdown",
    "comparison_to_rich",
    "mcnemar",
    "paired_comparison",
    "plot_accuracy_vs_context",
    "plot_accuracy_vs_tokens",
    "plot_categories",
    "plot_cost_vs_accuracy",
    "summary_table",
    "to_csv",
    "to_markdown",
    "to_rich",
    "variant_color",
]
