"""Per-task metrics from Spark's listener bus: a py4j listener or the bridge's JVM recorder,
behind one ``open_listener``, returning flat :class:`TaskRecord` rows."""
