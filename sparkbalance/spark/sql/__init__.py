"""The DataFrame path: balanced repartition, groupBy, grouped-map and join, routed inside the JVM
as Spark SQL expressions (hashes, literals, routes, placement), with DataFrame key statistics."""
