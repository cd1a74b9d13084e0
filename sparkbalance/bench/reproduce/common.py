"""Shared pieces of the reproductions: text tables and PNG plots (matplotlib, Agg)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

__all__ = ["format_rows", "fmt", "line_plot"]


def fmt(x: Any) -> str:
    """Compact number format: 3 significant digits, scientific for tiny/huge values.

    Examples
    --------
    >>> fmt(0.000123), fmt(12.345), fmt(None), fmt("MinTable")
    ('1.23e-04', '12.3', '-', 'MinTable')
    """
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    x = float(x)
    if x != 0 and (abs(x) < 1e-2 or abs(x) >= 1e5):
        return f"{x:.2e}"
    return f"{x:.3g}"


def format_rows(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A titled, right-aligned text table.

    Examples
    --------
    >>> print(format_rows("T", ["a", "b"], [[1, 0.5]]))
    T
    a    b
    1  0.5
    """
    cells = [[fmt(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(header)]
    lines = [title, "  ".join(h.rjust(w) for h, w in zip(header, widths))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)


def line_plot(path: Path, title: str, xlabel: str, ylabel: str,
              series: dict[str, tuple[Sequence[float], Sequence[float]]], *,
              logx: bool = False, logy: bool = False) -> Path | None:
    """One PNG with a line per series; None when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # plots are optional; the tables are printed anyway
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, (x, y) in series.items():
        ax.plot(list(x), list(y), marker="o", label=name)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("symlog", linthresh=1e-6)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
