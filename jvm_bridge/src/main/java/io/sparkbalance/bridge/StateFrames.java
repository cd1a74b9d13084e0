package io.sparkbalance.bridge;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.HashPartitioner;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.util.DoubleAccumulator;
import org.apache.spark.util.LongAccumulator;

import scala.Tuple2;

/**
 * JVM-side operations on the keyed state's frames, so that Spark never ships the
 * untouched state through a Python worker.
 *
 * <p>The keyed state ({@code sparkbalance/state/frames/format.py}) is an RDD of {@code byte[]}
 * frames: byte 0 is a tag ({@code 'S'} state sub-block, {@code 'B'} batch block,
 * {@code 'O'} outputs, {@code 'T'} statistics), bytes 1-4 the key group (big-endian
 * int32), the rest Python data this class never reads. Both operations are narrow: no
 * shuffle, partition {@code i} of the result depends on partition {@code i} of the
 * inputs only.
 */
public final class StateFrames {
  private StateFrames() {}

  /**
   * Version of the frame protocol this class reads: 2 adds {@code 'R'} frames (a batch's
   * record chunks, straight from its routing shuffle, with their key groups as the index),
   * which {@link #divert} reads like a {@code 'G'} frame and passes on. Python asks before
   * it sends them: a jar without this method would set aside the state of their groups.
   */
  public static int protocol() {
    return 2;
  }

  /**
   * Frames of {@code rdd} with tag {@code tag} whose (partition, group) is (or, with
   * {@code member == false}, is not) marked in {@code mask}: the byte at
   * {@code partition * stride + group}. {@code mask == null} selects every frame with the
   * tag; a position beyond the mask counts as unmarked.
   */
  public static JavaRDD<byte[]> select(JavaRDD<byte[]> rdd, byte tag, byte[] mask,
                                       int stride, boolean member) {
    final byte[] m = mask;
    // The partition is the RDD's own index, not the task's: inside a union (a batch
    // shuffle carrying migrating state) the two differ.
    return rdd.mapPartitionsWithIndex((pid, it) -> new Filter(it, f -> {
      if (f.length < 5 || f[0] != tag) {
        return false;
      }
      if (m == null) {
        return true;
      }
      int g = group(f);
      long at = (long) pid * stride + g;
      boolean marked = g >= 0 && at < m.length && m[(int) at] != 0;
      return marked == member;
    }), true);
  }

  /** The frames of an iterator a predicate keeps (lazy). */
  static final class Filter implements Iterator<byte[]> {
    private final Iterator<byte[]> in;
    private final java.util.function.Predicate<byte[]> keep;
    private byte[] next;

    Filter(Iterator<byte[]> in, java.util.function.Predicate<byte[]> keep) {
      this.in = in;
      this.keep = keep;
    }

    @Override
    public boolean hasNext() {
      while (next == null && in.hasNext()) {
        byte[] f = in.next();
        if (keep.test(f)) {
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

  /** The group of a frame (bytes 1-4, big-endian). */
  static int group(byte[] f) {
    return ((f[1] & 0xff) << 24) | ((f[2] & 0xff) << 16) | ((f[3] & 0xff) << 8) | (f[4] & 0xff);
  }

  /**
   * Partition {@code i} of the result is partition {@code i} of {@code a} followed by
   * partition {@code i} of {@code b} (a {@code ZippedPartitionsRDD2}: both must have the
   * same number of partitions).
   */
  public static JavaRDD<byte[]> concat(JavaRDD<byte[]> a, JavaRDD<byte[]> b) {
    if (a.getNumPartitions() != b.getNumPartitions()) {
      throw new IllegalArgumentException("concat of " + a.getNumPartitions() + " and "
          + b.getNumPartitions() + " partitions; expected equal counts");
    }
    return a.zipPartitions(b, (x, y) -> new Chain(x, y));
  }

  /**
   * The shuffle of a migration's moving frames, Python-free after the map side:
   * {@code routed} holds, per moving frame, a 4-byte element (its new partition,
   * big-endian int32) then the frame. Partition {@code p} of the result is the frames
   * routed to {@code p}, as bytes; as they are read, their header counts ({@code nkeys},
   * {@code nbytes}) are added to {@code keys} and {@code bytes} (in the stage that reads
   * them: run as the result stage of one job, each task's updates apply once). A
   * destination outside {@code [0, numPartitions)} fails the task (never wrapped).
   */
  public static JavaRDD<byte[]> moveFrames(JavaRDD<byte[]> routed, int numPartitions,
                                           LongAccumulator keys, DoubleAccumulator bytes) {
    final int n = numPartitions;
    return routed.mapPartitionsToPair(it -> new Iterator<Tuple2<Integer, byte[]>>() {
      @Override
      public boolean hasNext() {
        return it.hasNext();
      }

      @Override
      public Tuple2<Integer, byte[]> next() {
        byte[] to = it.next();
        if (to.length != 4 || !it.hasNext()) {
          throw new IllegalStateException("a moving frame without its 4-byte destination "
              + "before it (" + to.length + " bytes, then " + (it.hasNext() ? "a frame" : "none")
              + ")");
        }
        int p = ByteBuffer.wrap(to).getInt();
        if (p < 0 || p >= n) {
          throw new IllegalStateException("moving frame routed to partition " + p
              + "; expected 0 <= p < " + n);
        }
        return new Tuple2<>(p, it.next());
      }
    }).partitionBy(new HashPartitioner(n)).values().mapPartitions(it -> new Iterator<byte[]>() {
      @Override
      public boolean hasNext() {
        return it.hasNext();
      }

      @Override
      public byte[] next() {
        byte[] f = it.next();
        ByteBuffer h = ByteBuffer.wrap(f);
        keys.add(h.getInt(5));
        bytes.add(h.getDouble(9));
        return f;
      }
    }, true);
  }

  /** Tag of the frame listing the key groups a batch block touches ({@code 'G'}). */
  static final byte TAG_GROUPS = (byte) 'G';
  /** Tag of a chunk of batch records listing its key groups ({@code 'R'}). */
  static final byte TAG_CHUNK = (byte) 'R';
  /** Tag of the summary of the frames that bypassed Python ({@code 'U'}). */
  static final byte TAG_BYPASS = (byte) 'U';
  /** Fixed header size of a frame ({@code >BiidqI} in frames.py). */
  static final int HEADER = 29;

  /** Frames set aside by {@link #divert} for {@link #rejoin} of the same task. */
  private static final ConcurrentHashMap<String, List<byte[]>> ASIDE = new ConcurrentHashMap<>();

  private static String asideKey(String tag, int pid) {
    TaskContext tc = TaskContext.get();
    return tag + ":" + pid + ":" + (tc == null ? -1L : tc.taskAttemptId());
  }

  /**
   * The merge's input without the state frames it need not read. Per partition, the
   * {@code 'G'} frame, or the {@code 'R'} chunk frames (first: the batch side comes
   * first), list the key groups of the batch; a state frame goes on to Python when its
   * group is listed, marked in
   * {@code mask} (byte {@code partition * stride + group}: groups whose keys the planner
   * watches, or that a migration touches), or its window expires ({@code oldest} in
   * {@code [0, expireBefore]}); any other is set aside, unread, for {@link #rejoin} in
   * the same task. Other frames pass on. Narrow; {@code tag} names the pair.
   */
  public static JavaRDD<byte[]> divert(JavaRDD<byte[]> rdd, byte[] mask, int stride,
                                       long expireBefore, String tag) {
    final byte[] m = mask;
    return rdd.mapPartitionsWithIndex((pid, it) -> {
      // Filled by the thread feeding Python, read by the task's thread: synchronised.
      final List<byte[]> aside = java.util.Collections.synchronizedList(new ArrayList<>());
      ASIDE.put(asideKey(tag, pid), aside);
      TaskContext tc = TaskContext.get();
      if (tc != null) {
        final String key = asideKey(tag, pid);
        tc.addTaskCompletionListener(ctx -> {
          ASIDE.remove(key);
        });
      }
      final boolean[] touched = new boolean[Math.max(stride, 0)];
      return new Filter(it, f -> {
        if (f.length < HEADER) {
          return true;
        }
        if (f[0] == TAG_GROUPS) {
          mark(touched, f, f.length - HEADER);
          return false;
        }
        if (f[0] == TAG_CHUNK) {
          // the groups are the index (its length at byte 25); the records follow, for Python
          mark(touched, f, Math.min(ByteBuffer.wrap(f).getInt(25), f.length - HEADER));
          return true;
        }
        if (f[0] != (byte) 'S') {
          return true;
        }
        int g = group(f);
        boolean keep = g < 0 || g >= touched.length || touched[g];
        if (!keep && m != null) {
          long at = (long) pid * stride + g;
          keep = at < m.length && m[(int) at] != 0;
        }
        if (!keep) {
          long oldest = ByteBuffer.wrap(f, 17, 8).getLong();
          keep = oldest >= 0 && oldest <= expireBefore;
        }
        if (!keep) {
          aside.add(f);
        }
        return keep;
      });
    }, true);
  }

  /** Marks the groups listed (int32 each) in the {@code len} bytes after the header. */
  static void mark(boolean[] touched, byte[] f, int len) {
    ByteBuffer b = ByteBuffer.wrap(f, HEADER, Math.max(len, 0));
    while (b.remaining() >= 4) {
      int g = b.getInt();
      if (g >= 0 && g < touched.length) {
        touched[g] = true;
      }
    }
  }

  /**
   * Partition {@code i}: the frames of {@code merged} (the Python merge over
   * {@link #divert}'s output), then the state frames set aside, then one {@code 'U'}
   * frame summarising them: the header ({@code nkeys}, {@code nbytes} summed) and one
   * {@code (int group, int nkeys, double nbytes)} per frame set aside. Narrow.
   */
  public static JavaRDD<byte[]> rejoin(JavaRDD<byte[]> merged, String tag) {
    return merged.mapPartitionsWithIndex((pid, it) -> new Iterator<byte[]>() {
      private Iterator<byte[]> rest;

      @Override
      public boolean hasNext() {
        if (rest == null && it.hasNext()) {
          return true;
        }
        if (rest == null) {
          List<byte[]> aside = ASIDE.remove(asideKey(tag, pid));
          if (aside == null) {
            // never silently: the frames set aside would be lost
            throw new IllegalStateException("no frames set aside for " + tag + " partition "
                + pid + " in this task; divert and rejoin must run in one task");
          }
          List<byte[]> tail;
          synchronized (aside) {
            tail = new ArrayList<>(aside);
          }
          tail.add(summary(aside));
          rest = tail.iterator();
        }
        return rest.hasNext();
      }

      @Override
      public byte[] next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        return rest == null ? it.next() : rest.next();
      }
    }, true);
  }

  static byte[] summary(List<byte[]> frames) {
    ByteBuffer out = ByteBuffer.allocate(HEADER + 16 * frames.size());
    int nkeys = 0;
    double nbytes = 0.0;
    for (byte[] f : frames) {
      ByteBuffer h = ByteBuffer.wrap(f);
      nkeys += h.getInt(5);
      nbytes += h.getDouble(9);
    }
    out.put(TAG_BYPASS).putInt(0).putInt(nkeys).putDouble(nbytes).putLong(-1L).putInt(0);
    for (byte[] f : frames) {
      ByteBuffer h = ByteBuffer.wrap(f);
      out.putInt(group(f)).putInt(h.getInt(5)).putDouble(h.getDouble(9));
    }
    return out.array();
  }

  /** One iterator after the other. */
  static final class Chain implements Iterator<byte[]> {
    private final Iterator<byte[]> first;
    private final Iterator<byte[]> second;

    Chain(Iterator<byte[]> first, Iterator<byte[]> second) {
      this.first = first;
      this.second = second;
    }

    @Override
    public boolean hasNext() {
      return first.hasNext() || second.hasNext();
    }

    @Override
    public byte[] next() {
      if (first.hasNext()) {
        return first.next();
      }
      if (second.hasNext()) {
        return second.next();
      }
      throw new NoSuchElementException();
    }
  }
}
