"""Reproductions of the papers' tables and figures (``python -m sparkbalance reproduce``).

One module per paper (Fang et al., Nasir et al., Ding et al., Yang et al., Xing et al.), each
with ``run(out, quick) -> str``: it
prints and returns its tables (with the paper's figures in a column beside ours where the
paper gives them) and writes PNG plots under ``out``. Spark-free simulations over the
package's pure layers (routing, planning), so ``--quick`` runs in seconds.
"""
from __future__ import annotations

import importlib.util

__all__ = ["PAPERS", "available_papers"]

#: Paper name -> module of this package.
PAPERS: dict[str, str] = {"fang": "fang", "nasir": "nasir", "ding": "ding", "yang": "yang",
                          "xing": "xing"}


def available_papers() -> list[str]:
    """Papers whose reproduction module is present.

    Examples
    --------
    >>> "fang" in available_papers()
    True
    """
    out = []
    for name, mod in PAPERS.items():
        if importlib.util.find_spec(f"{__name__}.{mod}") is None:
            continue
        out.append(name)
    return out
