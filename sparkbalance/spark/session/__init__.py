"""Session plumbing: the JVM bridge jar, the ``spark.sparkbalance.*`` configuration, job labels
and the ``spark-submit`` arguments."""
