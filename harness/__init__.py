"""amd-mixed-mla submission toolkit: validate, time, rank and submit MLA decode kernels."""

__version__ = "0.1.0"
