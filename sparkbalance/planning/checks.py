"""The planners' check of a real-valued parameter (θ, β, σ, the HLHE degree, ...): a number,
finite, above its bound; the error names the value and the valid range.

Pure (numpy only); constructors call it once, never the planning loop.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_real"]


def check_real(value: Any, name: str, low: float = 0.0, *, strict: bool = False) -> float:
    """``value`` as a float if it is a finite number ``>= low`` (``> low`` when ``strict``).

    Examples
    --------
    >>> check_real(0.08, "theta"), check_real(2, "degree", 1)
    (0.08, 2.0)
    >>> check_real(0, "sigma", strict=True)
    Traceback (most recent call last):
    ValueError: sigma=0; expected a finite number > 0
    >>> check_real("0.1", "theta")
    Traceback (most recent call last):
    TypeError: theta='0.1'; expected a number >= 0
    """
    op = ">" if strict else ">="
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}={value!r}; expected a number {op} {low:g}")
    if not np.isfinite(value) or (value <= low if strict else value < low):
        raise ValueError(f"{name}={value!r}; expected a finite number {op} {low:g}")
    return float(value)
