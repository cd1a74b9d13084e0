"""Demos run by ``python -m sparkbalance demo`` (``make demo``)."""
