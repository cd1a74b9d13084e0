"""Adapters to Spark (RDD, DataFrame, listener, JVM bridge). Only this package and
``sparkbalance.state`` import pyspark."""
