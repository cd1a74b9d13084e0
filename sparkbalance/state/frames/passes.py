"""The Java RDD of a Python pass built in one bridge call (``PythonPasses.pass``).

PySpark builds the JVM side of each Python pass (``mapPartitions`` and the like) lazily,
when the RDD is first used, in about a dozen py4j round trips: the broadcast threshold, the
function object (the session's environment map and include list converted element by
element), the parent's RDD, the ``PythonRDD`` and its Java view, each leaving a reference
Python releases later (one more round trip each). A keyed-state batch builds several
(the batch's routing map side, the merge, the state files' write): measured on the
stateful drop-in, a third of the driver's ~280 round trips per batch.

Only the pickled command differs from pass to pass, so :class:`Passes` keeps one function
of the session as a template in the JVM and sends the command's bytes with it: one round
trip per pass. It pickles the command exactly as PySpark does; a pass it cannot build so
(a profiler on, broadcast variables in the closure, a command above the broadcast
threshold, no bridge class) is left to PySpark, with the same result.

Spark side of the keyed state (imports pyspark inside the functions).
"""
from __future__ import annotations

from typing import Any

__all__ = ["PYTHON_PASSES_CLASS", "Passes"]

#: The bridge class that builds a Python pass's RDD from a template function.
PYTHON_PASSES_CLASS: str = "io.sparkbalance.bridge.PythonPasses"


class Passes:
    """Builds Python passes' Java RDDs of one SparkContext through the bridge.

    Parameters
    ----------
    sc : the SparkContext.
    method : the bridge's ``PythonPasses.pass`` (a py4j method), or None: PySpark builds
        every pass itself.

    Examples
    --------
    >>> passes = Passes(sc, None)                                # doctest: +SKIP
    >>> jrdd = passes.built(sc.parallelize([1]).map(str))      # doctest: +SKIP
    """

    def __init__(self, sc: Any, method: Any) -> None:
        self.sc, self._pass = sc, method
        self._template: Any = None
        self._key: tuple | None = None
        self._threshold: int | None = None
        self.built_here = 0          # passes built by the bridge (tests, profiles)

    def _function(self) -> Any:
        """The template function (the session's environment, includes, interpreter,
        version and accumulator; no command), rebuilt when the session's change."""
        sc = self.sc
        key = (dict(sc.environment), list(sc._python_includes), sc.pythonExec, sc.pythonVer)
        if self._template is None or key != self._key:
            self._template = sc._jvm.SimplePythonFunction(
                bytearray(), sc.environment, sc._python_includes, sc.pythonExec,
                sc.pythonVer, [], sc._javaAccumulator)
            self._key = key
            self._threshold = int(sc._jvm.PythonUtils.getBroadcastThreshold(sc._jsc))
        return self._template

    def built(self, rdd: Any) -> Any:
        """``rdd._jrdd``, built by the bridge when ``rdd`` is a Python pass not built yet
        (see the module); any other RDD's as PySpark builds it."""
        try:
            from pyspark.core.rdd import PipelinedRDD
        except ImportError:      # PySpark 3.5
            from pyspark.rdd import PipelinedRDD
        if (self._pass is None or not isinstance(rdd, PipelinedRDD)
                or rdd._jrdd_val is not None or rdd.ctx.profiler_collector is not None):
            return rdd._jrdd
        from pyspark.serializers import CloudPickleSerializer, NoOpSerializer
        sc = self.sc
        if rdd._bypass_serializer:                 # as PipelinedRDD._jrdd
            rdd._jrdd_deserializer = NoOpSerializer()
        template = self._function()
        command = (rdd.func, None, rdd._prev_jrdd_deserializer, rdd._jrdd_deserializer)
        pickled = CloudPickleSerializer().dumps(command)
        if len(pickled) > self._threshold or next(iter(sc._pickled_broadcast_vars), None):
            return rdd._jrdd      # PySpark pickles it again, broadcasting what it must
        rdd._jrdd_val = self._pass(rdd._prev_jrdd, template, bytearray(pickled),
                                   rdd.preservesPartitioning, rdd.is_barrier)
        self.built_here += 1
        return rdd._jrdd_val
