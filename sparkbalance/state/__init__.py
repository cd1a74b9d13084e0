"""Keyed state across batches with delta migration (the rebalancing controller)."""
