"""Diagnostics of a finished run: the summary table, ESS per gradient and per second, the
warnings of a run that went wrong, plots."""

from .checks import SamplingWarning, check_run
from .summary import (autocorrelation, clean_json, efficiency, flat_ess, format_table,
                      min_median_max, run_totals, summarize)

__all__ = ["SamplingWarning", "autocorrelation", "check_run", "clean_json", "efficiency",
           "flat_ess", "format_table", "min_median_max", "run_totals", "summarize"]
