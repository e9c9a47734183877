"""Diagnostics of a finished run: the summary table, ESS per gradient and per second, plots."""

from .summary import (autocorrelation, clean_json, efficiency, flat_ess, format_table,
                      min_median_max, run_totals, summarize)

__all__ = ["autocorrelation", "clean_json", "efficiency", "flat_ess", "format_table",
           "min_median_max", "run_totals", "summarize"]
