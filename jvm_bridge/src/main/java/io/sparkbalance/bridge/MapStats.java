package io.sparkbalance.bridge;

import org.apache.spark.MapOutputStatistics;
import org.apache.spark.Partition;
import org.apache.spark.Partitioner;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.rdd.RDD;
import org.apache.spark.rdd.ShuffledRDD;
import org.apache.spark.shuffle.ShuffleManager;
import org.apache.spark.shuffle.ShuffleReader;

import scala.Tuple2;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * Zero-pass key statistics for the RDD adapters, in the manner of Spark's adaptive query
 * execution: run only the map stage of a shuffle into m fine key groups, read the bytes of
 * each group from Spark's own map-output statistics, and then read the already
 * materialised shuffle once through an RDD whose reduce tasks each read the groups a plan
 * gives them (a contiguous range of groups as one block per map output).
 *
 * <p>{@code SparkContext.submitMapStage} is {@code private[spark]} in Scala but public in the
 * bytecode (it is what AQE uses). The reading RDD is narrow over the {@code ShuffledRDD},
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
   * {@code pairs} shuffled into {@code partitioner}'s partitions with {@link PairSerializer}
   * (what {@code JavaPairRDD.partitionBy} does, with a relocatable serializer so that
   * {@link #coalesce} can fetch a range of key groups as one block per map output).
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  public static JavaPairRDD<Object, byte[]> shuffle(JavaPairRDD<?, ?> pairs,
                                                    Partitioner partitioner) {
    ClassTag<Object> any = ClassTag$.MODULE$.apply(Object.class);
    ShuffledRDD shuffled = new ShuffledRDD(pairs.rdd(), partitioner, any, any, any);
    shuffled.setSerializer(new PairSerializer());
    return new JavaPairRDD(shuffled, any, ClassTag$.MODULE$.apply(byte[].class));
  }

  /**
   * The shuffle read as {@code numTasks} partitions, partition i reading the key groups g with
   * {@code owner[g] == i} (owner given as comma-separated ints, one per group). Each run of
   * consecutive groups with one owner is one shuffle read of that range; a plan of contiguous
   * ranges reads one range per task, fetched as one block per map output when the shuffle's
   * serializer is relocatable ({@link #shuffle}).
   */
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
    RDD<?> rdd = shuffled.rdd();
    int m = rdd.partitions().length;
    if (own.length != m) {
      throw new IllegalStateException("plan covers " + own.length + " key groups; the "
          + "shuffle has " + m + " partitions");
    }
    GroupRead read = new GroupRead(rdd, dependency(rdd), runs(own, numTasks));
    return new JavaPairRDD<>(read, ClassTag$.MODULE$.apply(Object.class),
        ClassTag$.MODULE$.apply(byte[].class));
  }

  /** Per task, its runs of consecutive owned groups as {start0, end0, start1, end1, ...}. */
  public static int[][] runs(int[] owner, int numTasks) {
    int[] count = new int[numTasks];
    for (int g = 0; g < owner.length; g++) {
      if (g == 0 || owner[g] != owner[g - 1]) count[owner[g]]++;
    }
    int[][] out = new int[numTasks][];
    for (int t = 0; t < numTasks; t++) out[t] = new int[2 * count[t]];
    int[] at = new int[numTasks];
    for (int g = 0; g < owner.length; ) {
      int e = g + 1;
      while (e < owner.length && owner[e] == owner[g]) e++;
      int t = owner[g];
      out[t][at[t]++] = g;
      out[t][at[t]++] = e;
      g = e;
    }
    return out;
  }

  /** See {@link #coalesce}: narrow over the shuffled RDD, so its map stage is not rerun. */
  @SuppressWarnings({"unchecked", "rawtypes"})
  static final class GroupRead extends RDD<Tuple2<Object, byte[]>> {
    private static final long serialVersionUID = 1L;
    private static final ClassTag PAIR = ClassTag$.MODULE$.apply(Tuple2.class);
    private final ShuffleDependency<?, ?, ?> dep;
    private final int[][] runs;

    GroupRead(RDD<?> shuffled, ShuffleDependency<?, ?, ?> dep, int[][] runs) {
      super(shuffled, PAIR);
      this.dep = dep;
      this.runs = runs;
    }

    @Override
    public Partition[] getPartitions() {
      Partition[] out = new Partition[runs.length];
      for (int i = 0; i < runs.length; i++) out[i] = new Task(i);
      return out;
    }

    @Override
    public scala.collection.Iterator<Tuple2<Object, byte[]>> compute(Partition split,
                                                                     TaskContext context) {
      return new Runs(dep, runs[split.index()], context);
    }
  }

  static final class Task implements Partition {
    private static final long serialVersionUID = 1L;
    private final int index;

    Task(int index) {
      this.index = index;
    }

    @Override
    public int index() {
      return index;
    }

    @Override
    public int hashCode() {
      return index;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Task && ((Task) o).index == index;
    }
  }

  // SparkEnv.shuffleManagerFor(dep) (Spark 4.x, which also has a pipelined shuffle manager),
  // looked up as a method handle: Class.getMethod resolves every public signature of SparkEnv,
  // some of which name protobuf classes that are not on the executor's class path.
  private static final java.lang.invoke.MethodHandle MANAGER_FOR = managerFor();

  private static java.lang.invoke.MethodHandle managerFor() {
    try {
      return java.lang.invoke.MethodHandles.publicLookup().findVirtual(SparkEnv.class,
          "shuffleManagerFor", java.lang.invoke.MethodType.methodType(ShuffleManager.class,
              ShuffleDependency.class));
    } catch (ReflectiveOperationException e) {
      return null;  // Spark 3.5: one shuffle manager
    }
  }

  /** The shuffle manager that wrote {@code dep}. */
  @SuppressWarnings("deprecation")
  static ShuffleManager manager(ShuffleDependency<?, ?, ?> dep) {
    SparkEnv env = SparkEnv.get();
    if (MANAGER_FOR == null) {
      return env.shuffleManager();
    }
    try {
      return (ShuffleManager) MANAGER_FOR.invoke(env, dep);
    } catch (Throwable e) {
      throw new IllegalStateException("could not find the shuffle manager of shuffle "
          + dep.shuffleId(), e);
    }
  }

  /** The records of a task's runs, each run's shuffle reader opened when the last ends. */
  @SuppressWarnings({"unchecked", "rawtypes"})
  static final class Runs extends scala.collection.AbstractIterator<Tuple2<Object, byte[]>> {
    // SortShuffleManager reads a range [start, end) of reduce partitions as one block per
    // map output ("batch fetch") only when the task's local properties ask for it, as
    // adaptive execution's shuffle reads do; it also requires a relocatable serializer.
    private static final String BATCH = "__fetch_continuous_blocks_in_batch_enabled";
    private final ShuffleDependency<?, ?, ?> dep;
    private final int[] runs;
    private final TaskContext context;
    private int next;
    private scala.collection.Iterator<Object> current;

    Runs(ShuffleDependency<?, ?, ?> dep, int[] runs, TaskContext context) {
      this.dep = dep;
      this.runs = runs;
      this.context = context;
    }

    @Override
    public boolean hasNext() {
      while ((current == null || !current.hasNext()) && next < runs.length) {
        current = open(runs[next], runs[next + 1]);
        next += 2;
      }
      return current != null && current.hasNext();
    }

    // The reader yields the (key, value) Tuple2s of the deserialization stream, as
    // ShuffledRDD.compute relies on too.
    @Override
    public Tuple2<Object, byte[]> next() {
      if (!hasNext()) {
        throw new java.util.NoSuchElementException();
      }
      return (Tuple2<Object, byte[]>) current.next();
    }

    private scala.collection.Iterator<Object> open(int start, int end) {
      java.util.Properties props = context.getLocalProperties();
      String before = props.getProperty(BATCH);
      props.setProperty(BATCH, "true");
      try {
        ShuffleReader reader = manager(dep).getReader(dep.shuffleHandle(), 0,
            Integer.MAX_VALUE, start, end, context,
            context.taskMetrics().createTempShuffleReadMetrics());
        return (scala.collection.Iterator<Object>) (Object) reader.read();
      } finally {
        if (before == null) props.remove(BATCH);
        else props.setProperty(BATCH, before);
      }
    }
  }
}
