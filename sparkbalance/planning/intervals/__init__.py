"""Interval planners of Ding et al.: SSM, Simple_SSM, OMS, MTM-aware (+ PMC).

Tasks (key groups) ``0..m-1`` are owned by nodes (partitions) in contiguous intervals; the
planners move interval boundaries so that every node's work is at most ``(1+tau) W / n'``
while moving as little state as possible. Pure numpy; PMC can spread its cost matrices over
executors through an injected ``map_fn`` (pyspark is never imported here).

Examples
--------
>>> from sparkbalance.planning.intervals import SSM
>>> SSM(tau=0.4).plan([1] * 20, [1] * 20, [0, 13, 20], 3).migration_cost
4.0
"""
from __future__ import annotations

from .baselines import ConsistentHashing, StormDefault, TaskPlan
from .model import IntervalPlan, capacity, match_intervals
from .mtm import MTMAware, PMCResult, pmc, transition_matrix
from .oms import OMS
from .oracle import brute_force
from .partitionings import TooManyPartitionings, enumerate_partitionings, pairwise_costs
from .simple_ssm import SimpleSSM
from .banded import banded_positional
from .ssm import SSM, PlannerScaleWarning

__all__ = ["IntervalPlan", "SSM", "SimpleSSM", "OMS", "MTMAware", "PMCResult", "pmc",
           "transition_matrix", "StormDefault", "ConsistentHashing", "TaskPlan",
           "brute_force", "capacity", "match_intervals", "enumerate_partitionings",
           "pairwise_costs", "TooManyPartitionings", "banded_positional", "PlannerScaleWarning"]
