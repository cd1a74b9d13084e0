package io.sparkbalance.bridge;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;

import org.apache.spark.Partition;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.executor.TempShuffleReadMetrics;
import org.apache.spark.rdd.RDD;
import org.apache.spark.shuffle.ShuffleManager;

import scala.Product2;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * A routing shuffle read again under a new plan, without writing it again: partition
 * {@code p} of the result is the values of the written shuffle's reduce partitions
 * {@code sources[p]}, read through the shuffle manager's reader one reduce partition at a
 * time (as adaptive execution's skew and coalesce reads take ranges of a written shuffle).
 *
 * <p>The keyed state's look-ahead runs a batch's routing shuffle's map stage first, to count
 * its keys; when the plan made on those counts moves keys, partition {@code p} of the merge
 * reads its own reduce partition and those the moving keys were written to, and keeps only
 * the keys the new plan places on {@code p} (in Python, per key). The batch is never routed
 * a second time: the moving batch pays for the state it moves and one job boundary.
 *
 * <p>The RDD's one dependency is one-to-one on the shuffle's {@code ShuffledRDD} (same
 * partition count), so the scheduler finds the written map stage behind it and skips it;
 * its partitions are the {@code ShuffledRDD}'s.
 */
public final class StateReread extends RDD<byte[]> {
  private static final long serialVersionUID = 1L;
  private static final ClassTag<byte[]> BYTES = ClassTag$.MODULE$.apply(byte[].class);

  private final ShuffleDependency<?, ?, ?> dep;
  private final int[][] sources;

  private StateReread(RDD<?> shuffled, ShuffleDependency<?, ?, ?> dep, int[][] sources) {
    super(shuffled, BYTES);
    this.dep = dep;
    this.sources = sources;
  }

  /**
   * The shuffle {@code routed} reads ({@link StateShuffle#route}'s result, its map stage
   * run) read again: partition {@code p} holds the values of reduce partitions
   * {@code sources[p]}. {@code sources} is, per partition in order, a big-endian int32
   * count then that many reduce partition ids; it must describe exactly as many partitions
   * as the shuffle has, each id in range (else an {@code IllegalArgumentException} here,
   * before any job).
   */
  public static JavaRDD<byte[]> read(JavaRDD<byte[]> routed, byte[] sources) {
    RDD<?> shuffled = ((org.apache.spark.Dependency<?>) StateShuffle.head(routed.rdd())).rdd();
    Object d = StateShuffle.head(shuffled);
    if (!(d instanceof ShuffleDependency)) {
      throw new IllegalArgumentException("expected the RDD of StateShuffle.route; its "
          + "shuffle's dependency is a " + d.getClass().getName());
    }
    int n = shuffled.partitions().length;
    return new JavaRDD<>(new StateReread(shuffled, (ShuffleDependency<?, ?, ?>) d,
        decode(sources, n)), BYTES);
  }

  /** The per-partition source lists of {@link #read}, checked against {@code n}. */
  static int[][] decode(byte[] sources, int n) {
    ByteBuffer b = ByteBuffer.wrap(sources);
    int[][] out = new int[n][];
    for (int p = 0; p < n; p++) {
      if (b.remaining() < 4) {
        throw new IllegalArgumentException("sources describe " + p + " partitions; the "
            + "shuffle has " + n);
      }
      int c = b.getInt();
      if (c < 0 || b.remaining() < 4L * c) {
        throw new IllegalArgumentException("sources of partition " + p + ": " + c
            + " ids announced, " + b.remaining() / 4 + " left");
      }
      out[p] = new int[c];
      for (int i = 0; i < c; i++) {
        int q = b.getInt();
        if (q < 0 || q >= n) {
          throw new IllegalArgumentException("partition " + p + " reads reduce partition "
              + q + "; expected 0 <= q < " + n);
        }
        out[p][i] = q;
      }
    }
    if (b.hasRemaining()) {
      throw new IllegalArgumentException("sources describe more than the shuffle's " + n
          + " partitions");
    }
    return out;
  }

  @Override
  public Partition[] getPartitions() {
    return firstParent(BYTES).partitions();
  }

  @Override
  public scala.collection.Iterator<byte[]> compute(Partition split, TaskContext ctx) {
    final int[] from = sources[split.index()];
    final ShuffleManager sm = manager(dep);
    final TempShuffleReadMetrics metrics = ctx.taskMetrics().createTempShuffleReadMetrics();
    return new scala.collection.AbstractIterator<byte[]>() {
      private int next = 0;
      private scala.collection.Iterator<? extends Product2<?, ?>> cur;

      @Override
      public boolean hasNext() {
        while (cur == null || !cur.hasNext()) {
          if (next >= from.length) {
            return false;
          }
          int q = from[next++];
          cur = sm.<Object, Object>getReader(dep.shuffleHandle(), q, q + 1, ctx, metrics).read();
        }
        return true;
      }

      @Override
      public byte[] next() {
        if (!hasNext()) {
          throw new java.util.NoSuchElementException();
        }
        return (byte[]) cur.next()._2();
      }
    };
  }

  /**
   * The shuffle manager that wrote {@code dep}: Spark 4's {@code shuffleManagerFor(dep)}
   * where it exists (the one its {@code ShuffledRDD} reads through), else the session's.
   */
  private static ShuffleManager manager(ShuffleDependency<?, ?, ?> dep) {
    SparkEnv env = SparkEnv.get();
    MethodHandle m = managerFor();
    if (m == null) {
      return env.shuffleManager();
    }
    try {
      return (ShuffleManager) m.invoke(env, dep);
    } catch (Throwable e) {
      throw new IllegalStateException("SparkEnv.shuffleManagerFor failed", e);
    }
  }

  private static volatile MethodHandle managerFor;
  private static volatile boolean looked;

  /**
   * {@code SparkEnv.shuffleManagerFor} as a method handle, looked up by name and type
   * (reflection's {@code getMethod} loads every signature of {@code SparkEnv}, some of
   * whose types are not on an executor's class path); null where it does not exist.
   */
  private static MethodHandle managerFor() {
    if (!looked) {
      try {
        managerFor = MethodHandles.publicLookup().findVirtual(SparkEnv.class,
            "shuffleManagerFor", MethodType.methodType(ShuffleManager.class,
                ShuffleDependency.class));
      } catch (NoSuchMethodException | IllegalAccessException e) {
        managerFor = null;
      }
      looked = true;
    }
    return managerFor;
  }
}
