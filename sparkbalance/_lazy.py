"""PEP 562 lazy exports shared by the package ``__init__`` files.

Importing ``sparkbalance`` (or a subpackage) must stay cheap and must not import pyspark;
public names are resolved from their defining module on first access, then cached.
"""
from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Mapping


def lazy_getattr(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """Module ``__getattr__`` resolving ``name`` from ``exports[name]`` (a module path)."""
    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # cache: later lookups skip __getattr__
        return value
    return __getattr__
