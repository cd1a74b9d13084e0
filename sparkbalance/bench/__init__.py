"""Benchmark support shared by the demos (``python -m sparkbalance demo``) and the
benchmarks (``python -m sparkbalance bench``, ``integration/benchmarks/``).

One concept per module, imported by name (nothing is re-exported here, so importing the
package stays free of pyspark and numpy):

- :mod:`.workloads` — skewed and shifting key streams (Zipf; Fang et al. §5) and the costly
  per-record work (CPU loop steps plus an I/O-like wait) whose cost lands where a key lands;
- :mod:`.plain` — the plain-Spark baseline of keyed state (``state.cogroup(batch)`` per batch);
- :mod:`.streams` — one stream run through several planners, interleaved batch by batch;
- :mod:`.profile` — which Spark jobs and stages each batch ran and where its time went;
- :mod:`.report` — summary rows, medians over repeats, text tables and plots;
- :mod:`.session` — ``local[n]`` sessions with the JVM bridge jar, warm-up of the workers.
"""
