package io.sparkbalance.bridge;

import java.util.Iterator;
import java.util.NoSuchElementException;

import org.apache.spark.api.java.JavaRDD;

/**
 * JVM-side operations on the keyed state's frames, so that Spark never ships the
 * untouched state through a Python worker.
 *
 * <p>The keyed state ({@code sparkbalance/state/frames.py}) is an RDD of {@code byte[]}
 * frames: byte 0 is a tag ({@code 'S'} state sub-block, {@code 'B'} batch block,
 * {@code 'O'} outputs, {@code 'T'} statistics), bytes 1-4 the key group (big-endian
 * int32), the rest Python data this class never reads. Both operations are narrow: no
 * shuffle, partition {@code i} of the result depends on partition {@code i} of the
 * inputs only.
 */
public final class StateFrames {
  private StateFrames() {}

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
