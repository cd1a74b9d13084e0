package io.sparkbalance.bridge;

import java.io.Serializable;

import org.apache.spark.MapOutputStatistics;
import org.apache.spark.Partition;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.rdd.PartitionCoalescer;
import org.apache.spark.rdd.PartitionGroup;
import org.apache.spark.rdd.RDD;

import scala.Option;
import scala.Tuple2;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * Zero-pass key statistics for the RDD adapters, in the manner of Spark's adaptive query
 * execution: run only the map stage of a shuffle into m fine key groups, read the bytes of
 * each group from Spark's own map-output statistics, and then read the already
 * materialised shuffle once through a {@code CoalescedRDD} whose reduce tasks each own the
 * groups a plan gives them.
 *
 * <p>{@code SparkContext.submitMapStage} is {@code private[spark]} in Scala but public in the
 * bytecode (it is what AQE uses). The coalesced RDD is narrow over the {@code ShuffledRDD},
 * so the job that reads it finds the shuffle map stage already available and skips it:
 * the input is read once.
 */
public final class MapStats {
  private MapStats() {}

  /**
   * {@code obj.name()} looked up at run time. The Scala collection signatures differ between
   * Spark 3.5 (Scala 2.12: {@code RDD.dependencies()} returns {@code collection.Seq},
   * {@code ArrayBuffer.+=} returns {@code generic.Growable}) and Spark 4.x (Scala 2.13:
   * {@code immutable.Seq}, {@code mutable.Growable}); a direct call compiled against one
   * fails with {@code NoSuchMethodError} on the other. Called once per shuffle / key group.
   */
  static Object call(Class<?> owner, Object obj, String name, Object... args) {
    try {
      for (java.lang.reflect.Method m : owner.getMethods()) {
        if (m.getName().equals(name) && m.getParameterCount() == args.length) {
          return m.invoke(obj, args);
        }
      }
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("could not call " + owner.getName() + "." + name, e);
    }
    throw new IllegalStateException(owner.getName() + " has no method " + name);
  }

  @SuppressWarnings("unchecked")
  private static ShuffleDependency<Object, Object, Object> dependency(RDD<?> shuffled) {
    Object deps = call(RDD.class, shuffled, "dependencies");
    Object dep = call(scala.collection.Seq.class, deps, "head");
    if (!(dep instanceof ShuffleDependency)) {
      throw new IllegalArgumentException("expected a ShuffledRDD whose first dependency is a "
          + "ShuffleDependency; got " + dep.getClass().getName());
    }
    return (ShuffleDependency<Object, Object, Object>) dep;
  }

  /**
   * Run the map stage of {@code shuffled}'s shuffle and return its bytes per reduce
   * partition as one comma-separated String (one py4j round trip, not one per element).
   */
  public static String submitMapStage(JavaPairRDD<?, ?> shuffled) throws Exception {
    RDD<?> rdd = shuffled.rdd();
    SparkContext sc = rdd.context();
    MapOutputStatistics stats = sc.submitMapStage(dependency(rdd)).get();
    long[] bytes = stats.bytesByPartitionId();
    StringBuilder b = new StringBuilder(bytes.length * 8);
    for (int i = 0; i < bytes.length; i++) {
      if (i > 0) b.append(',');
      b.append(bytes[i]);
    }
    return b.toString();
  }

  /**
   * Groups -> reduce task as given by a plan; serializable as CoalescedRDD requires. Spark 3.5
   * (Scala 2.12) requires {@code scala.Serializable}, a class Scala 2.13 no longer has: there
   * {@code PlanCoalescer35} ({@code jvm_bridge/src/spark35/}) adds it, see {@link #planCoalescer}.
   */
  static class PlanCoalescer implements PartitionCoalescer, Serializable {
    private static final long serialVersionUID = 1L;
    private final int[] owner;
    private final int numTasks;

    PlanCoalescer(int[] owner, int numTasks) {
      this.owner = owner;
      this.numTasks = numTasks;
    }

    @Override
    public PartitionGroup[] coalesce(int maxPartitions, RDD<?> parent) {
      Partition[] parts = parent.partitions();
      if (parts.length != owner.length) {
        throw new IllegalStateException("plan covers " + owner.length + " key groups; the "
            + "shuffle has " + parts.length + " partitions");
      }
      PartitionGroup[] groups = new PartitionGroup[numTasks];
      for (int i = 0; i < numTasks; i++) groups[i] = new PartitionGroup(Option.empty());
      for (int g = 0; g < parts.length; g++) {
        call(scala.collection.mutable.ArrayBuffer.class, groups[owner[g]].partitions(), "$plus$eq",
            parts[g]);
      }
      return groups;
    }
  }

  /**
   * The shuffle read as {@code numTasks} partitions, partition i reading the key groups g with
   * {@code owner[g] == i} (owner given as comma-separated ints, one per group).
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  public static JavaPairRDD<Object, byte[]> coalesce(JavaPairRDD<?, ?> shuffled, String owner,
                                                     int numTasks) {
    String[] parts = owner.isEmpty() ? new String[0] : owner.split(",");
    int[] own = new int[parts.length];
    for (int g = 0; g < parts.length; g++) {
      own[g] = Integer.parseInt(parts[g]);
      if (own[g] < 0 || own[g] >= numTasks) {
        throw new IllegalArgumentException("key group " + g + " goes to task " + own[g]
            + "; expected 0 <= task < numTasks=" + numTasks);
      }
    }
    RDD rdd = shuffled.rdd();
    PartitionCoalescer pc = planCoalescer(own, numTasks);
    RDD coalesced = rdd.coalesce(numTasks, false, Option.apply(pc), null);
    ClassTag<Tuple2> tag = ClassTag$.MODULE$.apply(Tuple2.class);
    return JavaPairRDD.fromJavaRDD(new JavaRDD(coalesced, tag));
  }

  /** A {@link PlanCoalescer} that the running Scala line accepts as serializable. */
  static PartitionCoalescer planCoalescer(int[] owner, int numTasks) {
    try {
      Class.forName("scala.Serializable");  // Scala 2.12 only
    } catch (ClassNotFoundException e) {
      return new PlanCoalescer(owner, numTasks);
    }
    try {
      return (PartitionCoalescer) Class.forName("io.sparkbalance.bridge.PlanCoalescer35")
          .getDeclaredConstructor(int[].class, int.class).newInstance(owner, numTasks);
    } catch (ReflectiveOperationException | LinkageError e) {
      throw new IllegalStateException("sparkbalance: the zero-pass statistics on Spark 3.5 need "
          + "the bridge jar's Spark 3.5 classes (PlanCoalescer35; rebuild with "
          + "jvm_bridge/build.sh)", e);
    }
  }
}
