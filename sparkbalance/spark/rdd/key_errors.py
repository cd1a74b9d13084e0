"""Bad keys met on executors, reported where the user reads first.

A partition function refuses keys it cannot route (None, NaN, unhashable values such as
lists and dicts) with a ``TypeError``/``ValueError`` that names the key. On an executor that
message ends up at the bottom of a long Python traceback inside a Java one, without saying
which task met the key. :class:`KeyGuard` wraps the function the RDD adapters hand to Spark
and re-raises such a refusal as :class:`KeyRoutingError`, whose first line names the key's
type, the partition and stage being read, and the valid key types; the Java trace may still
surround it, but this line is the first of the Python part, with nothing chained below it.

Records that are not ``(key, value)`` pairs fail earlier, in PySpark's own ``for k, v in
...`` loops (``add_shuffle_key``, the map-side combiner), where no code of ours runs.
:func:`check_pairs` is put in front of those loops: it looks at the first record of each
partition and raises :class:`NotAPairError` when it does not unpack into two, then hands the
rest on untouched (``itertools.chain``), so it costs nothing per record. A partition whose
first record is a pair but a later one is not still fails with PySpark's own unpacking error.

On the driver a task's failure comes back as PySpark's ``PythonException``, whose text is the
executor's traceback (and, in the log, a Java trace per failed task attempt).
:func:`install_driver_errors` (installed when this module is imported) turns such
an exception, when its cause is one of the two errors above, into one exception on the
driver: a :class:`KeyRoutingError` or :class:`NotAPairError` that is also the
``PythonException`` PySpark raised (code catching either keeps working), whose text is the
cause's two lines (key, partition, stage, fix) and whose ``executor_error`` keeps the
executor's full text. What stays out of reach of Python: Spark still logs each failed task
attempt (``ERROR Executor`` / ``WARN TaskSetManager``) and retries it up to
``spark.task.maxFailures`` times (1 in local mode, 4 on a cluster) before the job fails;
docs/troubleshooting.md says how to quiet those lines.

Examples
--------
>>> g = KeyGuard(HashPartitioner(4))                         # doctest: +SKIP
>>> g(None)                                                  # doctest: +SKIP
Traceback (most recent call last):
...
KeyRoutingError: sparkbalance: key of type NoneType in input partition 3 (stage 7) cannot be routed by HashPartitioner ...
"""
from __future__ import annotations

import itertools
import weakref
from typing import Any, Callable, Iterable, Iterator

from sparkbalance.routing.base import partition_func

__all__ = ["KeyRoutingError", "KeyGuard", "VALID_KEYS", "describe_bad_key", "NotAPairError",
           "check_pairs", "describe_bad_record", "unpacks_into_two", "bad_record_error",
           "cause_in", "install_driver_errors"]

#: What every partition function of sparkbalance routes.
VALID_KEYS = ("None, int, str, bytes, float, bool, Decimal, date, datetime, time, timedelta, "
              "or tuples/lists of these")
_REPR_LIMIT = 80


class KeyRoutingError(TypeError, ValueError):
    """A key no partition function can route (a ``TypeError`` and a ``ValueError``, so code
    catching either of the original errors keeps working)."""


class NotAPairError(TypeError, ValueError):
    """A record that is not a ``(key, value)`` pair given to a keyed operation (a
    ``TypeError`` and a ``ValueError``, as PySpark's own unpacking raises either)."""


def _where() -> str:
    try:
        from pyspark import TaskContext
        ctx = TaskContext.get()
    except Exception:  # noqa: BLE001 - no pyspark or no task: driver-side call
        ctx = None
    if ctx is None:
        return "on the driver"
    return f"in input partition {ctx.partitionId()} (stage {ctx.stageId()})"


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text[:_REPR_LIMIT] + "..." if len(text) > _REPR_LIMIT else text


def describe_bad_key(key: Any, f: Any, exc: BaseException) -> str:
    """The message of :class:`KeyRoutingError`: cause first, then the original refusal.

    Examples
    --------
    >>> describe_bad_key({1}, "f", TypeError("unhashable")).splitlines()[0][:67]
    'sparkbalance: key of type set on the driver cannot be routed by str'
    """
    text = _short_repr(key)
    return (f"sparkbalance: key of type {type(key).__name__} {_where()} cannot be routed by "
            f"{type(f).__name__}: expected {VALID_KEYS}; got {text}\n"
            f"  ({type(exc).__name__}: {exc}) Filter or replace such keys before the keyed "
            "operation (e.g. rdd.filter(lambda kv: isinstance(kv[0], str))).")


class KeyGuard:
    """A partition function that re-raises refused keys as :class:`KeyRoutingError`.

    Everything else (``num_partitions``, ``splits_keys``, ``candidates``, ``assign``...)
    is the wrapped function's; two guards, or a guard and its function, compare equal when
    the functions do, so PySpark's partitioner comparisons still skip needless shuffles.
    A guard has ``fresh()`` exactly when its function has (the adapters ask for it): a
    guard of such a function is a :class:`_FreshKeyGuard`.

    Per record PySpark calls the guard's bound ``__call__``
    (:func:`~sparkbalance.routing.base.partition_func`), which calls the function's bound
    ``__call__``: two Python frames, no attribute hook on the way (an earlier guard
    overrode ``__getattribute__`` and cost about as much per record as the hash itself).

    Examples
    --------
    >>> class Double:
    ...     num_partitions = 4
    ...     def __call__(self, key):
    ...         return 2 * hash(key) % 4
    >>> KeyGuard(Double())(1), KeyGuard(Double()).num_partitions
    (2, 4)
    """

    def __new__(cls, f: Any) -> "KeyGuard":
        if cls is KeyGuard and callable(getattr(f, "fresh", None)):
            cls = _FreshKeyGuard
        return object.__new__(cls)

    def __init__(self, f: Any) -> None:
        self.f = f
        self._route = partition_func(f)

    def __call__(self, key: Any) -> int:
        try:
            return self._route(key)
        except (TypeError, ValueError) as exc:
            raise KeyRoutingError(describe_bad_key(key, self.f, exc)) from None

    @classmethod
    def of(cls, f: Any) -> "KeyGuard":
        """The guard of ``f``: one per function while it is in use, so that the bound
        ``__call__`` the adapters hand PySpark compares equal across calls with the same
        ``f`` (a bound method equals another only with the *same* ``__self__``), and
        PySpark still skips a shuffle into a partitioner the RDD already has."""
        g = _GUARDS.get(id(f))
        if g is None or g.f is not f:   # a guard holds f, so a live guard's id(f) is f's
            g = _GUARDS[id(f)] = cls(f)
        return g

    def __reduce__(self) -> tuple[Any, ...]:
        # Explicit: before Python 3.11 object has no __getstate__, and pickle would find the
        # wrapped function's through __getattr__ and rebuild a guard without ``f``.
        return (KeyGuard, (self.f,))

    def __getattr__(self, name: str) -> Any:
        # Only for names the guard lacks. "f"/"_route" are missing only while an instance is
        # being built; dunder lookups (pickle's __getstate__/__setstate__, copy's
        # __deepcopy__...) must not reach the function.
        if name in ("f", "_route") or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)
        return getattr(self.f, name)

    def __eq__(self, other: Any) -> bool:
        other = other.f if isinstance(other, KeyGuard) else other
        return self.f == other

    def __hash__(self) -> int:
        return hash(self.f)

    def __repr__(self) -> str:
        return f"KeyGuard({self.f!r})"


#: id(function) -> its guard, while something (an RDD's partitioner) holds the guard.
_GUARDS: "weakref.WeakValueDictionary[int, KeyGuard]" = weakref.WeakValueDictionary()


class _FreshKeyGuard(KeyGuard):
    """A guard of a function with local state per map task (splitting functions)."""

    def fresh(self) -> KeyGuard:
        """A guarded copy with its own local state (splitting functions, per map task)."""
        return KeyGuard(self.f.fresh())


def unpacks_into_two(record: Any) -> bool:
    """Whether ``k, v = record`` succeeds, without consuming a one-shot iterator."""
    try:
        return len(record) == 2
    except TypeError:
        pass
    try:
        iter(record)
    except TypeError:
        return False          # int, None, a plain object: PySpark's unpacking fails
    return True               # an iterable without len: only unpacking it would tell


def describe_bad_record(record: Any, partition: int) -> str:
    """The first line of :class:`NotAPairError`: what was expected, where, what came.

    Examples
    --------
    >>> describe_bad_record(5, 3).splitlines()[0]
    "sparkbalance: records must be (key, value) pairs; partition 3 got a <class 'int'>: 5"
    """
    text = _short_repr(record)
    return (f"sparkbalance: records must be (key, value) pairs; partition {partition} got a "
            f"{type(record)!r}: {text}\n"
            "  Key the RDD before the keyed operation (e.g. rdd.map(lambda x: (x, 1)) or "
            "rdd.keyBy(f)).")


def check_pairs(partition: int, records: Iterable[Any]) -> Iterator[Any]:
    """``mapPartitionsWithIndex`` body: refuse a partition whose first record is no pair.

    Only the first record is looked at; the others pass through ``itertools.chain`` at no
    cost per record (a later bad record fails in PySpark's unpacking, as without this check).

    Examples
    --------
    >>> list(check_pairs(0, [("a", 1), ("b", 2)]))
    [('a', 1), ('b', 2)]
    >>> try:
    ...     check_pairs(3, [5, 6])
    ... except NotAPairError as exc:
    ...     print(str(exc).splitlines()[0])
    sparkbalance: records must be (key, value) pairs; partition 3 got a <class 'int'>: 5
    """
    it = iter(records)
    for first in it:
        if not unpacks_into_two(first):
            raise NotAPairError(describe_bad_record(first, partition)) from None
        return itertools.chain((first,), it)
    return it


def bad_record_error(kv: Any, route: Callable[[Any], Any], f: Any) -> Exception | None:
    """The clear error for a record a map-side routing loop could not take: a
    :class:`NotAPairError`, or a :class:`KeyRoutingError` when ``route(key)`` refuses its key
    (``f``, the function or class named in the message); None when ``kv`` is a pair whose key
    routes (the failure was not this record's). Called once, after the loop failed, so the
    loop pays nothing per record for clear errors."""
    if not unpacks_into_two(kv):
        try:
            from pyspark import TaskContext
            ctx = TaskContext.get()
        except ImportError:  # pragma: no cover - executors always have pyspark
            ctx = None
        return NotAPairError(describe_bad_record(kv, ctx.partitionId() if ctx else -1))
    try:
        route(kv[0])
    except (TypeError, ValueError) as refused:
        return KeyRoutingError(describe_bad_key(kv[0], f, refused))
    return None


#: The errors a task may fail with that :func:`install_driver_errors` raises on the driver.
_CAUSES = (KeyRoutingError, NotAPairError)
#: Where the cause's text ends in a ``PythonException``'s message (Spark 4 appends the SQL
#: state; a Java trace starts with a tab).
_TEXT_ENDS = (" SQLSTATE", "\tat ", "JVM stacktrace:")


def cause_in(text: str) -> tuple[type, str] | None:
    """The sparkbalance error class and its message found in a task failure's ``text``
    (the executor's traceback as PySpark reports it), or None.

    Examples
    --------
    >>> tb = ("Traceback (most recent call last):\\n  File ...\\n"
    ...       "sparkbalance.spark.rdd.key_errors.NotAPairError: sparkbalance: records must "
    ...       "be (key, value) pairs; partition 3 got a <class 'int'>: 5\\n"
    ...       "  Key the RDD first.\\n SQLSTATE: 38000")
    >>> cls, message = cause_in(tb)
    >>> cls.__name__, message.splitlines()[1]
    ('NotAPairError', '  Key the RDD first.')
    """
    for cls in _CAUSES:
        at = text.rfind(f"{cls.__module__}.{cls.__name__}: ")
        if at < 0:
            continue
        lines = text[at:].split(": ", 1)[1].splitlines()
        kept = [lines[0]]
        for line in lines[1:]:
            if not line.strip() or line.startswith(_TEXT_ENDS):
                break
            kept.append(line)
        return cls, "\n".join(kept)
    return None


#: ``{(cause class, PySpark's exception class): the class raised on the driver}``.
_DRIVER_CLASSES: dict[tuple[type, type], type] = {}


def _driver_error(converted: BaseException) -> BaseException | None:
    found = cause_in(str(getattr(converted, "_desc", None) or converted))
    if found is None:
        return None
    cause, message = found
    # Always PySpark's PythonException, whatever ``converted`` is: PySpark 3.5 converts a
    # job's failure to an UnknownException, which its handler re-raises as the raw
    # Py4JJavaError (Java trace and all); the captured state (_desc, _origin...) is shared.
    from pyspark.errors.exceptions.captured import PythonException
    key = (cause, PythonException)
    cls = _DRIVER_CLASSES.get(key)
    if cls is None:
        cls = _DRIVER_CLASSES[key] = type(cause.__name__, (cause, PythonException), {
            "__module__": __name__, "__str__": lambda self: self.args[0],
            "__doc__": f"{cause.__name__} raised on an executor, as PySpark's "
                       "PythonException (catch either)."})
    err = cls.__new__(cls, message)
    err.__dict__.update(converted.__dict__)
    err.args = (message + "\n  (met in a Spark task; the task's full failure is this "
                "exception's executor_error)",)
    err.executor_error = str(converted)
    return err


#: Causes looked through for a task's PythonException (a SparkException wraps it once or
#: twice when the job was awaited in the JVM).
_CAUSE_DEPTH = 4


def _python_cause(e: Any) -> Any:
    """The ``org.apache.spark.api.python.PythonException`` among the causes of the Java
    exception ``e``, or None."""
    try:
        cause = e.getCause()
        for _ in range(_CAUSE_DEPTH):
            if cause is None:
                return None
            if cause.getClass().getName() == "org.apache.spark.api.python.PythonException":
                return cause
            cause = cause.getCause()
    except Exception:  # noqa: BLE001 - not a py4j Java exception: nothing to look through
        return None
    return None


def install_driver_errors() -> None:
    """Make PySpark raise a task's :class:`KeyRoutingError` / :class:`NotAPairError` as such
    on the driver (once per process; a no-op where PySpark has no exception conversion).

    PySpark turns a failed job's Java exception into a Python one in
    ``pyspark.errors.exceptions.captured.convert_exception``; this wraps that function so a
    ``PythonException`` whose cause is one of ours comes back as :func:`_driver_error`'s
    exception, and every other exception unchanged.
    """
    try:
        from pyspark.errors.exceptions import captured
    except ImportError:   # pragma: no cover - PySpark < 3.4
        return
    original = captured.convert_exception
    if getattr(original, "_sparkbalance", False):
        return

    def convert_exception(e: Any) -> Any:
        converted = original(e)
        clear = None
        if isinstance(converted, captured.PythonException):
            clear = _driver_error(converted)
        else:   # a job run from the JVM (the bridge's map stage) wraps the task's failure
            cause = _python_cause(e)
            if cause is not None:
                clear = _driver_error(original(cause))
        return converted if clear is None else clear

    convert_exception._sparkbalance = True  # type: ignore[attr-defined]
    captured.convert_exception = convert_exception


# On import: the RDD adapters import this module before their first job, and a job run from
# the JVM (the zero-pass map stage) creates no guard, so KeyGuard.of alone would be too late
# there. Harmless where it runs without a driver (an executor never converts py4j errors).
install_driver_errors()
