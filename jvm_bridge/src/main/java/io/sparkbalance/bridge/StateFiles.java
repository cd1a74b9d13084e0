package io.sparkbalance.bridge;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.SequenceFile;
import org.apache.spark.Partition;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.deploy.SparkHadoopUtil;
import org.apache.spark.rdd.RDD;
import org.apache.spark.storage.BlockResult;
import org.apache.spark.storage.RDDBlockId;

import scala.Option;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * The keyed state based on its committed checkpoint files, so that losing a cached block
 * costs one read of one part file instead of a recomputation of every batch since the
 * last lineage cut.
 *
 * <p>After a checkpoint commits, the state's frames exist twice: cached (the blocks of the
 * batch's merged RDD, the <em>anchor</em>) and in the part files just written. {@link
 * #rebase} returns an RDD whose only dependency is the files: partition {@code i} is the
 * anchor's cached block {@code i} (its frames of one tag) while that block exists
 * anywhere in the cluster, else the part file. Its lineage is one narrow read, whatever
 * came before; the anchor is reached through the block manager, not as a dependency, so
 * the scheduler never plans, and a task never serialises, the anchor's lineage.
 *
 * <p>{@link #parts} reads the part files that PySpark's {@code saveAsPickleFile} writes
 * ({@code part-NNNNN}: a Hadoop sequence file of Java-serialised arrays of pickled
 * batches), partition {@code i} from file {@code i} (a narrow read, no shuffle): the
 * elements are the pickled batches, which Python unpickles and verifies.
 */
public final class StateFiles {
  private StateFiles() {}

  private static final ClassTag<byte[]> BYTES = ClassTag$.MODULE$.apply(byte[].class);

  /** The part files {@code part-00000 ...} of {@code dir}, partition {@code i} file {@code i}. */
  public static JavaRDD<byte[]> parts(JavaSparkContext jsc, String dir, int numParts) {
    List<Integer> index = new ArrayList<>(numParts);
    for (int i = 0; i < numParts; i++) {
      index.add(i);
    }
    final String d = dir;
    return jsc.parallelize(index, numParts)
        .mapPartitionsWithIndex((pid, it) -> new PartReader(d, pid), true);
  }

  /**
   * As {@link #parts}, with partition {@code i} preferring the executors that hold {@code
   * near}'s cached block {@code i} now (the state the files were written from), so that a
   * task reading partition {@code i} through a {@link #rebase} runs where the block is.
   *
   * <p>The preference sits on the index RDD at the root of the read (a parallelised
   * collection with location preferences, {@code SparkContext.makeRDD}), where the
   * scheduler finds it by walking narrow dependencies. On Spark 4.x {@code Rebased}
   * also overrides {@code getPreferredLocations} (asked first, refreshed as blocks move);
   * on Spark 3.5 that override matches nothing (Scala 2.12's {@code collection.Seq}
   * return type), so this is the preference the scheduler sees there. Both Scala lines'
   * collection signatures differ, so the two calls that name them go by reflection.
   */
  public static JavaRDD<byte[]> parts(JavaSparkContext jsc, String dir, int numParts,
      JavaRDD<?> near) {
    String[][] where = blockLocations(near.rdd().id(), numParts);
    scala.collection.immutable.List<scala.Tuple2<Integer, scala.collection.immutable.List<String>>>
        seq = emptyList();
    for (int i = numParts - 1; i >= 0; i--) {
      scala.collection.immutable.List<String> hosts = emptyList();
      for (String h : where[i]) {
        hosts = hosts.$colon$colon(h);
      }
      seq = seq.$colon$colon(new scala.Tuple2<>(i, hosts));
    }
    RDD<Integer> index;
    try {
      java.lang.reflect.Method make = null;
      for (java.lang.reflect.Method m : jsc.sc().getClass().getMethods()) {
        if (m.getName().equals("makeRDD") && m.getParameterCount() == 2) {
          make = m;
        }
      }
      if (make == null) {
        throw new NoSuchMethodException("SparkContext.makeRDD(seq with locations, tag)");
      }
      @SuppressWarnings("unchecked")
      RDD<Integer> made = (RDD<Integer>) make.invoke(jsc.sc(), seq,
          ClassTag$.MODULE$.apply(Integer.class));
      index = made;
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot place the state's part files near its blocks", e);
    }
    final String d = dir;
    return index.toJavaRDD().mapPartitionsWithIndex((pid, it) -> new PartReader(d, pid), true);
  }

  @SuppressWarnings("unchecked")
  private static <T> scala.collection.immutable.List<T> emptyList() {
    return (scala.collection.immutable.List<T>) (Object) scala.collection.immutable.Nil$.MODULE$;
  }

  /**
   * For each partition {@code i < n} of the cached RDD {@code rddId}: the executors holding
   * its block, as {@code executor_<host>_<id>} (the form the scheduler reads as a cached
   * block's executor); empty where no block is cached. One batched look-up.
   */
  public static String[][] blockLocations(int rddId, int n) {
    org.apache.spark.storage.BlockId[] ids = new org.apache.spark.storage.BlockId[n];
    for (int i = 0; i < n; i++) {
      ids[i] = new RDDBlockId(rddId, i);
    }
    Object master = SparkEnv.get().blockManager().master();
    Object all;
    try {
      // IndexedSeq[Seq[BlockManagerId]]: collection.* on Scala 2.12, immutable.* on 2.13
      all = master.getClass().getMethod("getLocations", ids.getClass()).invoke(master,
          (Object) ids);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot look up the state's cached blocks", e);
    }
    String[][] w = new String[n][];
    scala.collection.Iterator<?> it = ((scala.collection.Iterable<?>) all).iterator();
    for (int i = 0; i < n; i++) {
      List<String> hosts = new ArrayList<>();
      if (it.hasNext()) {
        scala.collection.Iterator<?> bs = ((scala.collection.Iterable<?>) it.next()).iterator();
        while (bs.hasNext()) {
          org.apache.spark.storage.BlockManagerId b =
              (org.apache.spark.storage.BlockManagerId) bs.next();
          hosts.add("executor_" + b.host() + "_" + b.executorId());
        }
      }
      w[i] = hosts.toArray(new String[0]);
    }
    return w;
  }

  /**
   * Partition {@code i}: the frames with tag {@code tag} of {@code anchor}'s cached block
   * {@code i} when the block exists, else partition {@code i} of {@code files}. Both must
   * hold the same frames (the files were written from the anchor's frames of that tag).
   */
  public static JavaRDD<byte[]> rebase(JavaRDD<byte[]> anchor, byte tag, JavaRDD<byte[]> files) {
    if (anchor.getNumPartitions() != files.getNumPartitions()) {
      throw new IllegalArgumentException("rebase of " + anchor.getNumPartitions()
          + " cached partitions on " + files.getNumPartitions() + " files; expected equal counts");
    }
    @SuppressWarnings("unchecked")
    ClassTag<Object> stored = (ClassTag<Object>) (ClassTag<?>) anchor.rdd().elementClassTag();
    return new Rebased(files.rdd(), anchor.rdd().id(), stored, tag).toJavaRDD();
  }

  /** See {@link #rebase}. */
  static final class Rebased extends RDD<byte[]> {
    private static final long serialVersionUID = 1L;
    private final int anchorId;
    // The class tag the anchor's blocks were stored with: a block on disk or on another
    // executor is deserialised by the serializer it picks (Kryo for byte[], Java for the
    // Object tag of Java-API RDDs), so reading with another tag reads garbage.
    private final ClassTag<Object> stored;
    private final byte tag;

    Rebased(RDD<byte[]> files, int anchorId, ClassTag<Object> stored, byte tag) {
      super(files, BYTES);
      this.anchorId = anchorId;
      this.stored = stored;
      this.tag = tag;
    }

    @Override
    public Partition[] getPartitions() {
      return firstParent(BYTES).partitions();
    }

    // Where the anchor's blocks are, fetched for all partitions at once and kept briefly:
    // the scheduler asks partition by partition when it submits a stage.
    private transient String[][] where;
    private transient long whereAt;

    /**
     * The executors holding the anchor's block of {@code split}, so that a merge task
     * runs where the state is cached (as it would reading the cached RDD itself) instead
     * of fetching the block over the network. Overrides {@code RDD.getPreferredLocations}
     * on Spark 4.x (Scala 2.13's {@code immutable.Seq}); on Spark 3.5 (Scala 2.12, whose
     * method returns {@code collection.Seq}) it overrides nothing and is never called:
     * there the preference comes from the files' index RDD ({@link #parts} with {@code
     * near}), fixed when the state is rebased.
     */
    @Override
    public scala.collection.immutable.Seq<String> getPreferredLocations(Partition split) {
      long now = System.nanoTime();
      if (where == null || now - whereAt > 1_000_000_000L) {
        where = blockLocations(anchorId, partitions().length);
        whereAt = now;
      }
      scala.collection.immutable.List<String> out = emptyList();
      String[] hosts = split.index() < where.length ? where[split.index()] : null;
      if (hosts != null) {
        for (String h : hosts) {
          out = out.$colon$colon(h);
        }
      }
      return out;
    }

    @Override
    public scala.collection.Iterator<byte[]> compute(Partition split, TaskContext context) {
      Option<BlockResult> got = SparkEnv.get().blockManager()
          .get(new RDDBlockId(anchorId, split.index()), stored);
      if (got.isDefined()) {
        return new Tagged(got.get().data(), tag);
      }
      return firstParent(BYTES).iterator(split, context);
    }
  }

  /** The {@code byte[]} frames of a block's values with one tag (lazy). */
  static final class Tagged extends scala.collection.AbstractIterator<byte[]> {
    private final scala.collection.Iterator<Object> in;
    private final byte tag;
    private byte[] next;

    Tagged(scala.collection.Iterator<Object> in, byte tag) {
      this.in = in;
      this.tag = tag;
    }

    @Override
    public boolean hasNext() {
      while (next == null && in.hasNext()) {
        byte[] f = (byte[]) in.next();
        if (f.length >= 5 && f[0] == tag) {
          next = f;
        }
      }
      return next != null;
    }

    @Override
    public byte[] next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      byte[] f = next;
      next = null;
      return f;
    }
  }

  /** The records of one part file, opened on first use and closed at its end. */
  static final class PartReader implements Iterator<byte[]> {
    private final Path path;
    private SequenceFile.Reader reader;
    private byte[][] chunk;
    private int at;
    private boolean done;

    PartReader(String dir, int pid) {
      this.path = new Path(dir, String.format("part-%05d", pid));
    }

    private void open() throws IOException {
      Configuration conf = SparkHadoopUtil.get().newConfiguration(SparkEnv.get().conf());
      reader = new SequenceFile.Reader(conf, SequenceFile.Reader.file(path));
      TaskContext tc = TaskContext.get();
      if (tc != null) {
        final SequenceFile.Reader r = reader;
        tc.addTaskCompletionListener(new org.apache.spark.util.TaskCompletionListener() {
          @Override
          public void onTaskCompletion(TaskContext context) {
            try {
              r.close();
            } catch (IOException ignored) {
              // closing a reader that hit the end already: nothing left to release
            }
          }
        });
      }
    }

    @Override
    public boolean hasNext() {
      try {
        while (!done && (chunk == null || at >= chunk.length)) {
          if (reader == null) {
            open();
          }
          BytesWritable value = new BytesWritable();
          if (!reader.next(NullWritable.get(), value)) {
            reader.close();
            done = true;
            break;
          }
          try (ObjectInputStream in = new ObjectInputStream(
              new ByteArrayInputStream(value.getBytes(), 0, value.getLength()))) {
            chunk = (byte[][]) in.readObject();
          } catch (ClassNotFoundException e) {
            throw new IOException(path + ": not a file of pickled batches", e);
          }
          at = 0;
        }
        return !done;
      } catch (IOException e) {
        throw new UncheckedIOException(path + ": " + e.getMessage(), e);
      }
    }

    @Override
    public byte[] next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      return chunk[at++];
    }
  }
}
