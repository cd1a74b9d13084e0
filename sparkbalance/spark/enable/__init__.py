"""The session-wide mode: the DataFrame and RDD calls users already write, balanced when
skew makes it pay (``sb.enable(spark)``; ``docs/enable.md``).

* :mod:`.install`: ``enable`` / ``disable`` put the hooks on Spark's classes and take them
  off exactly;
* :mod:`.hooks`: what each hooked method does (user calls only, the session's
  ``spark.sparkbalance.enabled``, plain unless the check says balancing pays);
* :mod:`.check`: the bounded skew check and its prediction.
"""
from __future__ import annotations

from sparkbalance._lazy import lazy_getattr

_EXPORTS = {
    "enable": "sparkbalance.spark.enable.install",
    "disable": "sparkbalance.spark.enable.install",
    "is_enabled": "sparkbalance.spark.enable.install",
    "is_installed": "sparkbalance.spark.enable.install",
    "decisions": "sparkbalance.spark.enable.hooks",
    "EnableDecision": "sparkbalance.spark.enable.hooks",
    "predicted_gain": "sparkbalance.spark.enable.check",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_getattr(__name__, _EXPORTS)
