package io.sparkbalance.bridge;

/**
 * {@link MapStats.PlanCoalescer} for Spark 3.5, whose {@code RDD.coalesce} requires the
 * coalescer to be a {@code scala.Serializable} (Scala 2.12; the type is gone from 2.13, hence
 * compiled against the stub in {@code jvm_bridge/src/spark35-stubs/}). Made by
 * {@link MapStats#planCoalescer} only when that class exists.
 */
final class PlanCoalescer35 extends MapStats.PlanCoalescer implements scala.Serializable {
  private static final long serialVersionUID = 1L;

  PlanCoalescer35(int[] owner, int numTasks) {
    super(owner, numTasks);
  }
}
