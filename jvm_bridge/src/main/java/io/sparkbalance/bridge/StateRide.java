package io.sparkbalance.bridge;

import java.util.Collections;
import java.util.Iterator;
import java.util.NoSuchElementException;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * The map side of a migration riding in a batch's routing shuffle, read by the batch's own
 * map tasks: no task of its own.
 *
 * <p>A riding migration's leaving state used to be read by a map task of its own beside
 * the batch's (their union: {@code n + 1} map tasks on {@code n} slots, so the last one
 * waited for a free slot, and one more Python task to start). Here map task {@code i}
 * reads, before batch partition {@code i}, the selected state frames of the state
 * partitions given to it: partition {@code i} of the state when both have as many
 * partitions, the state padded with empty partitions when the batch has more, coalesced
 * (narrowly, no shuffle) when it has fewer. Between the two an empty element tells the
 * Python side where the frames end (a frame is never empty); the batch's elements follow
 * as its JVM RDD holds them, for its own deserializer.
 */
public final class StateRide {
  private StateRide() {}

  /**
   * Per partition of {@code batch}: the frames of the state partitions given to it (see
   * the class), one empty element, then the batch partition's elements. Narrow on both.
   * Null for a batch of no partition: no map task of it could read the state.
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  public static JavaRDD<Object> withBatch(JavaRDD<byte[]> frames, JavaRDD<?> batch) {
    int m = batch.getNumPartitions();
    if (m < 1) {
      return null;
    }
    int p = frames.getNumPartitions();
    JavaRDD<byte[]> side = frames;
    if (p > m) {
      side = frames.coalesce(m);
    } else if (p < m) {
      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(frames.context());
      side = frames.union(jsc.parallelize(Collections.<byte[]>emptyList(), m - p));
    }
    return side.zipPartitions((JavaRDD) batch, (x, y) -> new Separated(x, (Iterator<Object>) y));
  }

  /** The frames, one empty element, then the batch's elements. */
  static final class Separated implements Iterator<Object> {
    private static final byte[] SEPARATOR = new byte[0];
    private final Iterator<byte[]> frames;
    private final Iterator<Object> batch;
    private boolean separated;

    Separated(Iterator<byte[]> frames, Iterator<Object> batch) {
      this.frames = frames;
      this.batch = batch;
    }

    @Override
    public boolean hasNext() {
      return !separated || batch.hasNext();
    }

    @Override
    public Object next() {
      if (!separated) {
        if (frames.hasNext()) {
          return frames.next();
        }
        separated = true;
        return SEPARATOR;
      }
      if (!batch.hasNext()) {
        throw new NoSuchElementException();
      }
      return batch.next();
    }
  }
}
