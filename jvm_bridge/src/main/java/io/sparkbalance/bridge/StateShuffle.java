package io.sparkbalance.bridge;

import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.python.PairwiseRDD;
import org.apache.spark.api.python.PythonPartitioner;
import org.apache.spark.api.python.PythonRDD;
import org.apache.spark.rdd.RDD;

/**
 * The keyed state's routing shuffle built and run from the driver in one call each,
 * instead of a py4j round trip per step.
 *
 * <p>PySpark's {@code partitionBy} builds its shuffle from Python one JVM object at a time
 * (the union of the map sides, {@code PairwiseRDD}, {@code asJavaPairRDD},
 * {@code PythonPartitioner}, {@code partitionBy}, {@code valueOfPair}: about ten round
 * trips and as many references Python must release later), and running only its map
 * stage walked the lineage the same way. {@link #route} and {@link #runMapStage} are the
 * same steps in the JVM; the shuffle written is byte for byte the one PySpark writes
 * (same RDDs, same partitioner).
 */
public final class StateShuffle {
  private StateShuffle() {}

  /**
   * The map side {@code keyed} (a Python RDD writing {@code pack_long(partition)} then a
   * chunk, as PySpark's {@code partitionBy}) shuffled to {@code numPartitions} partitions
   * by {@code PythonPartitioner(numPartitions, partitionerId)}: the chunks as written.
   */
  public static JavaRDD<byte[]> route(JavaRDD<byte[]> keyed, int numPartitions,
                                      long partitionerId) {
    JavaPairRDD<Object, byte[]> pairs = new PairwiseRDD(keyed.rdd()).asJavaPairRDD();
    return PythonRDD.valueOfPair(
        pairs.partitionBy(new PythonPartitioner(numPartitions, partitionerId)));
  }

  /** {@link #route} of the union of two map sides (a batch and the state riding with it). */
  public static JavaRDD<byte[]> route(JavaRDD<byte[]> keyed, JavaRDD<byte[]> other,
                                      int numPartitions, long partitionerId) {
    return route(keyed.union(other), numPartitions, partitionerId);
  }

  /**
   * Run only the map stage of the shuffle {@code routed} reads ({@link #route}'s result),
   * as adaptive execution does; a later job over it skips the stage. Returns the number of
   * map tasks (0: an empty batch, whose map stage Spark refuses to submit; none ran).
   */
  public static int runMapStage(JavaRDD<byte[]> routed) throws Exception {
    RDD<?> values = routed.rdd();
    RDD<?> shuffled = ((org.apache.spark.Dependency<?>) head(values)).rdd();
    Object dep = head(shuffled);
    if (!(dep instanceof ShuffleDependency)) {
      throw new IllegalArgumentException("expected the RDD of StateShuffle.route; its "
          + "shuffle's dependency is a " + dep.getClass().getName());
    }
    ShuffleDependency<?, ?, ?> shuffle = (ShuffleDependency<?, ?, ?>) dep;
    int maps = shuffle.rdd().partitions().length;
    if (maps == 0) {
      return 0;
    }
    SparkContext sc = values.context();
    sc.submitMapStage(shuffle).get();
    return maps;
  }

  /** The first dependency of {@code rdd} (Scala's Seq type differs between 2.12 and 2.13). */
  static Object head(RDD<?> rdd) {
    Object deps = MapStats.call(RDD.class, rdd, "dependencies");
    return MapStats.call(scala.collection.Seq.class, deps, "head");
  }
}
