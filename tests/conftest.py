"""Shared test settings: hypothesis profiles (CI keeps property tests modest in time)."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", deadline=None, max_examples=500,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def calls(monkeypatch):
    """The strategy resolver wrapped: the list of the strategy each call was given (tests that
    an adapter call resolves its strategy once)."""
    from sparkbalance import strategies
    seen: list = []
    real = strategies.resolve

    def counted(strategy=None, params=None, **kw):
        seen.append(strategy)
        return real(strategy, params, **kw)
    monkeypatch.setattr(strategies, "resolve", counted)
    return seen
