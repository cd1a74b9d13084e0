"""Workloads of the demos and benchmarks: skewed key streams and costly per-record work.

Keys follow Zipf frequencies (rank r has weight r^-z); the shifting stream of Fang et al. §5
swaps the frequencies of hot keys between partitions every interval. The per-record work is
CPU loop steps plus, optionally, an I/O-like wait (a lookup in an external store): waiting,
unlike CPU work, lets n tasks run side by side on a 2-core machine, so a batch's time shows
its slowest partition as it would on n cores.

Pure Python and numpy; :func:`costly_reduce` runs a Spark job (pyspark imported lazily).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

__all__ = ["SLEEP_QUANTUM_S", "busy_count", "busy_work", "loops_for_us", "zipf_records",
           "shifting_batches", "make_batches", "batch_loads", "RunResult", "costly_reduce"]

#: Simulated I/O is slept in chunks of at least this many seconds: one ``time.sleep`` per
#: key would add the OS's wake-up latency (~0.06-0.5 ms, more under load) per call, a cost
#: per *key* rather than per record that flattens the skew the benchmark is about.
SLEEP_QUANTUM_S = 0.002


def _sleep_owed(debt: float) -> float:
    """Sleep the ``debt`` seconds owed once they reach :data:`SLEEP_QUANTUM_S`; return what
    is still owed (negative when the OS overslept: credited to the next records)."""
    if debt < SLEEP_QUANTUM_S:
        return debt
    t0 = time.perf_counter()
    time.sleep(debt)
    return debt - (time.perf_counter() - t0)


# --------------------------------------------------------------------------- per-record work
def busy_count(work: int = 200, io_us: float = 0.0) -> Callable[[int, list], tuple[int, list]]:
    """``update_values`` of the stream demo: count records, with costly work per record.

    Each record costs ``work`` loop steps of CPU (200 ≈ 10 µs) and ``io_us`` µs of waiting
    (an I/O-bound update), so a partition's task time follows its record count. The wait
    is owed per record and slept in chunks (:data:`SLEEP_QUANTUM_S`), oversleeping
    credited, so a task waits ``io_us`` × its records give or take one chunk.

    Parameters
    ----------
    work : int
        CPU loop steps per record.
    io_us : float
        Simulated I/O wait per record, microseconds.

    Returns
    -------
    callable
        ``update_values(state, values) -> (state + len(values), [new state])``.

    Examples
    --------
    >>> busy_count(work=1)(5, [1, 1])
    (7, [7])
    """
    wait = io_us * 1e-6
    debt = [0.0]          # seconds owed by this deserialised copy (one per task)

    def update_values(state: int, values: list) -> tuple[int, list]:
        acc = 0
        for v in values:
            for i in range(work):
                acc ^= (v * 31 + i) & 0xFF
        if wait:
            debt[0] = _sleep_owed(debt[0] + wait * len(values))
        new = state + len(values)
        return new, [new]
    return update_values


def busy_work(v: int, loops: int) -> int:
    """About ``loops`` iterations of pure-Python arithmetic, then ``2 v + 1``.

    Examples
    --------
    >>> busy_work(3, 1000)
    7
    """
    x = v
    for i in range(loops):
        x = (x * 31 + i) & 0xFFFF
    return 2 * v + 1 + (x & 0)


def loops_for_us(work_us: float) -> int:
    """Loop count of :func:`busy_work` that costs about ``work_us`` µs of CPU here.

    Measured in CPU time, not wall time: on a busy machine wall time would overstate the
    cost per loop.

    Examples
    --------
    >>> loops_for_us(30.0) >= 1
    True
    """
    t0 = time.process_time()
    n = 400_000
    busy_work(1, n)
    per_loop = max(time.process_time() - t0, 1e-6) / n
    return max(1, int(work_us * 1e-6 / per_loop))


# --------------------------------------------------------------------------- key streams
def zipf_records(num_keys: int, skew: float, num_records: int, seed: int = 7) -> np.ndarray:
    """``num_records`` key ids drawn from Zipf(``skew``) over ``num_keys`` keys.

    Rank 0 is the hottest key.

    Examples
    --------
    >>> keys = zipf_records(100, 1.2, 1000, seed=1)
    >>> len(keys), int(np.bincount(keys).argmax())
    (1000, 0)
    """
    ranks = np.arange(1, num_keys + 1, dtype=np.float64)
    p = ranks ** -float(skew)
    p /= p.sum()
    rng = np.random.default_rng(seed)
    return rng.choice(num_keys, size=num_records, p=p).astype(np.int64)


def shifting_batches(num_keys: int, num_partitions: int, num_batches: int, records: int, *,
                     z: float = 1.0, f: float = 1.0, seed: int = 0,
                     batches_per_interval: int = 1) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(keys, counts)`` per batch of a shifting Zipf stream (Fang et al. §5).

    Interval 0 draws frequencies ∝ rank^-z; each later interval swaps frequencies of
    random key pairs homed on different partitions until a load share ``f``·θ_ref moved
    (:func:`~sparkbalance.planning.synthetic.fluctuate`). Every batch of an interval is a
    fresh multinomial sample of ``records`` records from that interval's frequencies.
    The benchmarks' name for :func:`sparkbalance.bench.shifting.shifting_zipf_counts`.

    Examples
    --------
    >>> it = shifting_batches(50, 4, 4, 500, seed=1, batches_per_interval=2)
    >>> [int(c.sum()) for _, c in it]
    [500, 500, 500, 500]
    """
    from sparkbalance.bench.shifting import shifting_zipf_counts
    return shifting_zipf_counts(num_keys, num_partitions, num_batches, z=z,
                                records_per_batch=records, f=f, seed=seed,
                                batches_per_interval=batches_per_interval)


def make_batches(num_keys: int, num_partitions: int, num_batches: int, records: int,
                 z: float, f: float, seed: int, batches_per_interval: int = 1) -> list[list]:
    """The batches of :func:`shifting_batches` as lists of ``(key, 1)`` records.

    Examples
    --------
    >>> [len(b) for b in make_batches(50, 2, 3, 100, 1.0, 1.0, seed=0)]
    [100, 100, 100]
    """
    from sparkbalance.bench.shifting import batch_records
    return [batch_records(k, c, seed=seed + t) for t, (k, c) in enumerate(
        shifting_batches(num_keys, num_partitions, num_batches, records, z=z, f=f, seed=seed,
                         batches_per_interval=batches_per_interval))]


def batch_loads(batch: Sequence[tuple], num_partitions: int) -> np.ndarray:
    """Records per partition of ``batch`` under plain hashing (``stable_hash(k) % n``).

    Examples
    --------
    >>> int(batch_loads([(1, 1), (1, 1), (2, 1)], 4).sum())
    3
    """
    from sparkbalance.routing.hash import home_partitions
    if not batch:
        return np.zeros(num_partitions)
    keys, counts = np.unique(np.array([k for k, _ in batch]), return_counts=True)
    return np.bincount(home_partitions(keys, num_partitions), weights=counts,
                       minlength=num_partitions)


# --------------------------------------------------------------------------- costly reduce
@dataclass
class RunResult:
    """One :func:`costly_reduce`: per-partition records and task times, and the result."""

    strategy: str
    records: list[int]       # records per partition after routing
    seconds: list[float]     # measured task seconds per partition (the costly part)
    cpu: list[float]         # CPU seconds of the same (insensitive to other processes)
    wall: float              # job wall time (routing shuffle + costly stage + collect)
    fit_seconds: float       # statistics + fitting
    result: dict             # key -> reduced value

    @property
    def imbalance(self) -> float:
        """max/avg records per partition (1.0 when there are none)."""
        r = np.asarray(self.records, dtype=float)
        return float(r.max() / r.mean()) if r.mean() > 0 else 1.0

    @property
    def time_imbalance(self) -> float:
        """max/avg measured task seconds per partition."""
        s = np.asarray(self.seconds, dtype=float)
        return float(s.max() / s.mean()) if s.mean() > 0 else 1.0


def _costly_partition(loops: int, wait_us: float = 0.0
                      ) -> Callable[[int, Iterator[Any]], Iterator[Any]]:
    wait = wait_us * 1e-6

    def run(index: int, records: Iterator[Any]) -> Iterator[Any]:
        t0, c0 = time.perf_counter(), time.process_time()
        acc: dict = {}
        count = 0
        debt = 0.0         # waits owed, slept in chunks (oversleeping credited)
        for k, v in records:
            acc[k] = acc.get(k, 0) + busy_work(v, loops)
            count += 1
            if wait:
                debt = _sleep_owed(debt + wait)
        if debt > 0:
            time.sleep(debt)
        yield ("meta", (index, count, time.perf_counter() - t0, time.process_time() - c0))
        for kv in acc.items():
            yield ("data", kv)
    return run


def costly_reduce(rdd: Any, num_partitions: int, strategy: str, loops: int,
                  wait_us: float = 0.0, **params: Any) -> RunResult:
    """Route ``rdd`` with ``strategy``, run a costly per-record reduce, merge the partials.

    After the shuffle every record costs ``loops`` steps of :func:`busy_work` and
    ``wait_us`` µs of waiting (an I/O-bound step, e.g. a lookup in an external store): a
    heavy per-record reduce whose cost lands where the key lands, unlike a map-side
    combine; partials of a key split over several partitions are summed on the driver.

    Parameters
    ----------
    rdd : pyspark.RDD
        ``(key, int value)`` records.
    num_partitions : int
        Partitions after the shuffle.
    strategy : str
        A name of :func:`sparkbalance.strategies.available`.
    loops : int
        :func:`busy_work` steps per record (see :func:`loops_for_us`).
    wait_us : float
        Waiting per record after the shuffle, µs (slept in chunks of
        :data:`SLEEP_QUANTUM_S`, so a task waits ``wait_us`` × its records).
    **params
        Parameters of the strategy's fitter.

    Examples
    --------
    >>> r = costly_reduce(sc.parallelize([(1, 0), (1, 1)]), 2, "hash", 10)  # doctest: +SKIP
    >>> r.result                                                         # doctest: +SKIP
    {1: 4}
    """
    from sparkbalance.spark.metrics.listener import sparkbalance_job_group
    from sparkbalance.routing.base import partition_func
    from sparkbalance.spark.rdd.adapters import fit_partitioner

    t0 = time.perf_counter()
    f = fit_partitioner(rdd, num_partitions, strategy=strategy, **params)
    fit_s = time.perf_counter() - t0
    with sparkbalance_job_group(rdd.context, "sparkbalance-demo", f"demo reduce: {strategy}"):
        t1 = time.perf_counter()
        rows = (rdd.partitionBy(num_partitions, partition_func(f))
                .mapPartitionsWithIndex(_costly_partition(loops, wait_us)).collect())
        wall = time.perf_counter() - t1
    records = [0] * num_partitions
    seconds = [0.0] * num_partitions
    cpu = [0.0] * num_partitions
    result: dict = {}
    for tag, payload in rows:
        if tag == "meta":
            i, c, s, cs = payload
            records[i], seconds[i], cpu[i] = c, s, cs
        else:  # final merge of the (<= d per key) partials: one number per key
            k, v = payload
            result[k] = result.get(k, 0) + v
    return RunResult(strategy, records, seconds, cpu, wall, fit_s, result)
