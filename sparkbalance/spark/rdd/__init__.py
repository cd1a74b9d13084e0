"""The RDD path: drop-ins for ``partitionBy``/``reduceByKey``/..., the inline-routed shuffle,
zero-pass map-side statistics, key statistics and bad-key reports."""
