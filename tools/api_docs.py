"""The API reference: HTML generated from the docstrings by pdoc (``make docs``).

Every module of the package is named to pdoc (a package's ``__all__`` would otherwise hide
its submodules), documented in numpydoc style, into ``build/api/`` (not in git). The
warnings pdoc or an import raises are printed; ``--strict`` fails on them.

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


#: pdoc's note that a module named on the command line was already found under its
#: package: expected, as every module is named (see the module docstring).
_ALREADY_ADDED = "has already been added"


def generate(out: Path) -> list[str]:
    """Write the reference under ``out``; returns the warnings pdoc or an import raised."""
    sys.path.insert(0, str(ROOT))
    import pdoc
    pdoc.render.configure(docformat="numpy", search=True, show_source=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc(*modules(), output_directory=out)
    return [f"{w.filename}:{w.lineno}: {w.message}" for w in caught
            if _ALREADY_ADDED not in str(w.message)]


def main(argv: list[str] | None = None) -> int:
    """Generate the reference; returns 0 (1 under ``--strict`` when anything warned)."""
    args = list(sys.argv[1:] if argv is None else argv)
    strict = "--strict" in args
    args = [a for a in args if a != "--strict"]
    out = Path(args[0]) if args else DEFAULT_OUT
    warned = generate(out)
    for text in warned:
        print(f"warning: {text}", file=sys.stderr)
    print(f"API reference: {out / 'index.html'} ({len(modules())} modules, "
          f"{len(warned)} warnings)")
    return 1 if strict and warned else 0


if __name__ == "__main__":
    sys.exit(main())
