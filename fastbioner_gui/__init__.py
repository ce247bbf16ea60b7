"""FastBioNER Studio, the curator's workbench: a thin Qt layer over ``fastbioner``."""

from fastbioner import __version__

__all__ = ["__version__"]
