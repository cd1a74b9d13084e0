"""PMC (Ding et al. Fig. 6) spread over Spark executors equals the local computation."""
from __future__ import annotations

import numpy as np

from sparkbalance.planning.intervals import MTMAware, pmc, transition_matrix


def _spark_map(sc):
    """The map_fn a Spark caller injects: rows of the cost matrices on executors."""
    return lambda f, xs: sc.parallelize(xs, max(1, min(len(xs), 8))).map(f).collect()


def test_pmc_on_spark_equals_local(sc):
    rng = np.random.default_rng(0)
    w = rng.integers(1, 5, 12).astype(float)
    s = rng.integers(1, 5, 12).astype(float)
    mtm = transition_matrix([2, 3, 4, 3, 2, 4, 3, 2])
    local = pmc(w, s, mtm, gamma=0.8, tau=0.5)
    spark = pmc(w, s, mtm, gamma=0.8, tau=0.5, map_fn=_spark_map(sc))
    assert spark.used_map_fn and not local.used_map_fn
    assert local.exact and spark.exact and local.converged and spark.converged
    assert local.partitionings.keys() == spark.partitionings.keys()
    for n in local.partitionings:
        np.testing.assert_array_equal(local.partitionings[n], spark.partitionings[n])
        np.testing.assert_allclose(local.projected[n], spark.projected[n], rtol=0, atol=1e-12)
    # and the online choice made from either table is the same
    a, b = MTMAware(mtm, tau=0.5), MTMAware(mtm, tau=0.5)
    a.precompute(w, s)
    b.precompute(w, s, map_fn=_spark_map(sc))
    pa = a.plan(w, s, [0, 6, 12], 3)
    pb = b.plan(w, s, [0, 6, 12], 3)
    assert pa.bounds.tolist() == pb.bounds.tolist()
    assert pa.migration_cost == pb.migration_cost
