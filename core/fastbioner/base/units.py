"""Sizes as a person reads them: decimal units (1 MB = 1,000,000 bytes), as the docs
and model cards quote sizes, so a figure printed by a command and one in the docs agree
(the shipped model's card said 28.3 MB, counted in MiB, where the README said 29.7 MB)."""

from __future__ import annotations


def human_size(n: float) -> str:
    """``n`` bytes in B, KB, MB or GB (decimal), one decimal above bytes."""
    for unit in ("B", "KB", "MB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"
