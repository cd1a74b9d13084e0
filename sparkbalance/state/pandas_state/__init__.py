"""A balanced drop-in for Spark's ``applyInPandasWithState``.

``stateful(stream.groupBy(...)).applyInPandasWithState(func, outputStructType,
stateStructType, outputMode, timeoutConf)`` takes Spark's arguments and function contract
and runs the keyed state on :class:`~sparkbalance.state.operator.KeyedStateOperator`
(balanced and rebalanced by its controller). Modules, one concept each:

- :mod:`.query` — the entry point, the handle and its ``writeStream``;
- :mod:`.batch_driver` — one micro-batch: clock, keys due, merge, sink;
- :mod:`.group_call` — one key's call of the user's function (data, timeout, the batch
  without data);
- :mod:`.group_state` — PySpark's ``GroupState`` for a call, and what the store keeps;
- :mod:`.arrow_rows` — rows to pandas and back through Spark's Arrow conversions;
- :mod:`.watermark` — the event-time watermark as Spark advances it;
- :mod:`.sinks` — the user's sink written once per batch id.
"""
from __future__ import annotations

from sparkbalance._lazy import lazy_getattr

__all__ = ["stateful", "StatefulGroups", "StatefulFrame", "StatefulWriter"]

_LAZY = {name: "sparkbalance.state.pandas_state.query" for name in __all__}

__getattr__ = lazy_getattr(__name__, _LAZY)
