"""Session plumbing: the JVM bridge jar (at launch, or brought in on first use), the executors'
Python, the ``spark.sparkbalance.*`` configuration, job labels and the ``spark-submit``
arguments."""
