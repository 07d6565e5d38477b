"""How results are shown: terminal tables, number formats (plots and HTML join with analysis)."""

from trainplay.report.profile_table import profile_table
from trainplay.report.units import format_bytes, format_count, format_flops

__all__ = ["format_bytes", "format_count", "format_flops", "profile_table"]
