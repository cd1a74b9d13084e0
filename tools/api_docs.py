"""The API reference: HTML generated from the docstrings by pdoc (``make docs``).

Every module of the package is documented (a package's ``__all__`` would otherwise hide its
submodules from pdoc), in numpydoc style, into ``build/api/`` (not in git). Warnings pdoc or
an import raises fail the run (``--strict``, as the test runs it), so a broken docstring
reference or a module that cannot be imported shows at once.

Usage: ``python tools/api_docs.py [OUT] [--strict]`` (needs the ``docs`` extra: pdoc).

Examples
--------
>>> "sparkbalance.routing.hash" in modules()              # doctest: +SKIP
True
"""
from __future__ import annotations

import pkgutil
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Where ``make docs`` writes the HTML (``build/`` is ignored by git).
DEFAULT_OUT = ROOT / "build" / "api"


def modules(package: str = "sparkbalance") -> list[str]:
    """Names of the package and every module under it, found from its files (no import)."""
    path = ROOT / package.replace(".", "/")
    found = [package]
    for info in pkgutil.walk_packages([str(path)], prefix=package + "."):
        if not info.name.rsplit(".", 1)[-1].startswith("_"):
            found.append(info.name)
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    """Generate the reference; returns 0 (1 under ``--strict`` when anything warned)."""
    args = list(sys.argv[1:] if argv is None else argv)
    strict = "--strict" in args
    args = [a for a in args if a != "--strict"]
    out = Path(args[0]) if args else DEFAULT_OUT
    sys.path.insert(0, str(ROOT))
    import pdoc
    pdoc.render.configure(docformat="numpy", search=True, show_source=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc(*modules(), output_directory=out)
    ours = [w for w in caught if "pdoc" in w.filename or "sparkbalance" in w.filename
            or issubclass(w.category, (RuntimeWarning, UserWarning))]
    for w in ours:
        print(f"warning: {w.filename}:{w.lineno}: {w.message}", file=sys.stderr)
    print(f"API reference: {out / 'index.html'} ({len(modules())} modules)")
    return 1 if strict and ours else 0


if __name__ == "__main__":
    sys.exit(main())
