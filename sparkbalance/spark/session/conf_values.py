"""Parsers of the ``spark.sparkbalance.*`` settings' text values.

Each takes the text a conf key holds and returns the value, or raises ``ValueError`` saying
what was expected; :mod:`sparkbalance.spark.session.conf` prefixes that message with the key
and the value, so every error names its key. Counts accept a number's text ("3000", "3e3").

Examples
--------
>>> positive_count("3e3"), max_keys("all"), window_mode(" Never ")
(3000, 0, 'never')
>>> fraction("1.5")
Traceback (most recent call last):
...
ValueError: expected a number with 0 < f <= 1
"""
from __future__ import annotations

import math

from sparkbalance import strategies

__all__ = ["WINDOW_MODES", "NUMERIC", "number", "fraction", "non_negative", "count",
           "positive_count", "non_negative_count", "max_keys", "boolean", "window_mode",
           "strategy_name", "planner_name"]

#: Values of ``spark.sparkbalance.window.split``: the payoff rule, or the split forced.
WINDOW_MODES = ("auto", "always", "never")


def number(value: str) -> float:
    x = float(value)
    if not math.isfinite(x):
        raise ValueError("expected a finite number")
    return x


def fraction(value: str) -> float:
    x = number(value)
    if not 0.0 < x <= 1.0:
        raise ValueError("expected a number with 0 < f <= 1")
    return x


def non_negative(value: str) -> float:
    x = number(value)
    if x < 0:
        raise ValueError("expected a number >= 0")
    return x


def count(value: str) -> int:
    # "3000" and "3e3" both mean 3000 entries
    return int(number(value))


def positive_count(value: str) -> int:
    x = count(value)
    if x < 1:
        raise ValueError("expected an integer >= 1")
    return x


def non_negative_count(value: str) -> int:
    x = count(value)
    if x < 0:
        raise ValueError("expected an integer >= 0")
    return x


def max_keys(value: str) -> int:
    # "all" (or 0): every distinct key (0 here, as None would read as "unset")
    return 0 if value.strip().lower() == "all" else non_negative_count(value)


def boolean(value: str) -> bool:
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise ValueError("expected true or false")
    return text == "true"


def known(name: str) -> str:
    try:
        strategies.get(name)            # an unknown name fails here, before any job
    except ValueError as exc:           # "strategy='x'; expected one of ...": keep the list
        raise ValueError(str(exc).split("; ", 1)[-1]) from None
    return name


def window_mode(value: str) -> str:
    text = value.strip().lower()
    if text not in WINDOW_MODES:
        raise ValueError(f"expected one of {', '.join(WINDOW_MODES)}")
    return text


def strategy_name(value: str) -> str:
    return known(value.strip())


def planner_name(value: str) -> str:
    name = value.strip()
    return name if name.lower() == "none" else known(name)


#: The parsers of numbers: a value they cannot read as a number is "expected a number".
NUMERIC = (number, fraction, non_negative, count, positive_count, non_negative_count, max_keys)
