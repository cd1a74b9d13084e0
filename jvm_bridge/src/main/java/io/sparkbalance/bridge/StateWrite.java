package io.sparkbalance.bridge;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectOutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;

import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapred.SequenceFileOutputFormat;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.util.CollectionAccumulator;

import scala.Tuple2;

/**
 * A batch's state frames written to its checkpoint in the JVM, in the job that computes
 * them: no Python pass reads the merged frames a second time to write them.
 *
 * <p>{@link #write} writes the frames of one tag of a frames RDD as PySpark's {@code
 * saveAsPickleFile(batchSize=10)} of {@code (pid, frame)} pairs writes them (a Hadoop
 * sequence file per partition of Java-serialised arrays of pickled batches; each batch a
 * pickled list of up to ten {@code (int, bytes)} tuples), so that {@code pickleFile} and
 * {@link StateFiles#parts} read them back unchanged. Per partition it computes what the
 * Python writer computed: the digest of its written frames (sha256 over the sorted sha256
 * of each frame, hex) and their count, and it keeps the frames of the tags to bring back
 * (statistics, outputs) in their order; these come back with the job's tasks (an
 * accumulator, merged once per partition of the result stage) and are returned as one
 * array: one py4j round trip.
 */
public final class StateWrite {
  private StateWrite() {}

  /** Frames of a pickled batch, as PySpark's {@code BatchedSerializer(..., 10)} cuts them. */
  static final int BATCH = 10;

  /**
   * Write the frames of {@code tag} of {@code frames} to {@code path}; return, per
   * partition in any order: {@code [pid int32][count int32][digest 64 ASCII hex][n
   * int32]} then {@code n} frames of the tags {@code collect} as {@code [length
   * int32][bytes]} (big-endian).
   */
  public static byte[] write(JavaRDD<byte[]> frames, int tag, byte[] collect, String path) {
    final CollectionAccumulator<byte[]> acc =
        frames.context().collectionAccumulator();
    final byte t = (byte) tag;
    final byte[] back = collect.clone();
    // saveAsObjectFile's own steps (arrays of ten elements, Java-serialised, as a
    // sequence file of NullWritable keys): called from Java it would build Object[]
    // arrays, which the readers do not take for byte[][]
    frames.mapPartitionsWithIndex((pid, it) -> pickled(pid, it, t, back, acc), true)
        .mapToPair(b -> new Tuple2<>(NullWritable.get(), new BytesWritable(b)))
        .saveAsHadoopFile(path, NullWritable.class, BytesWritable.class,
                          SequenceFileOutputFormat.class);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] part : acc.value()) {
      out.write(part, 0, part.length);
    }
    return out.toByteArray();
  }

  private static Iterator<byte[]> pickled(int pid, Iterator<byte[]> it, byte tag, byte[] collect,
                                          CollectionAccumulator<byte[]> acc) {
    return new Records(pid, it, tag, collect, acc);
  }

  /**
   * The partition's sequence-file records, made as the frames stream by: a frame of the
   * tag is hashed and pickled into the current batch (ten frames a batch, ten batches a
   * record), a frame of a tag to bring back is kept, and once the input is exhausted the
   * partition's summary goes to the accumulator. Only the digests, the frames brought
   * back and one record are held, never the partition's state.
   */
  private static final class Records implements Iterator<byte[]> {
    private final int pid;
    private final Iterator<byte[]> in;
    private final byte tag;
    private final byte[] collect;
    private final CollectionAccumulator<byte[]> acc;
    private final List<byte[]> digests = new ArrayList<>();
    private final List<byte[]> back = new ArrayList<>();
    private byte[] next;
    private boolean done;

    Records(int pid, Iterator<byte[]> in, byte tag, byte[] collect,
            CollectionAccumulator<byte[]> acc) {
      this.pid = pid;
      this.in = in;
      this.tag = tag;
      this.collect = collect;
      this.acc = acc;
    }

    @Override
    public boolean hasNext() {
      if (next == null && !done) {
        next = advance();
      }
      return next != null;
    }

    @Override
    public byte[] next() {
      if (!hasNext()) {
        throw new java.util.NoSuchElementException();
      }
      byte[] r = next;
      next = null;
      return r;
    }

    private byte[] advance() {
      List<byte[]> batches = new ArrayList<>(BATCH);
      List<byte[]> batch = new ArrayList<>(BATCH);
      while (batches.size() < BATCH && in.hasNext()) {
        byte[] f = in.next();
        if (f.length > 0 && f[0] == tag) {
          digests.add(sha256(f));
          batch.add(f);
          if (batch.size() == BATCH) {
            batches.add(pickle(pid, batch));
            batch.clear();
          }
        } else if (f.length > 0 && contains(collect, f[0])) {
          back.add(f);
        }
      }
      if (!batch.isEmpty()) {
        batches.add(pickle(pid, batch));
      }
      if (!in.hasNext()) {
        done = true;
        acc.add(summary(pid, digests, back));
      }
      return batches.isEmpty() ? null : serialized(batches.toArray(new byte[0][]));
    }
  }

  /** What Spark's {@code Utils.serialize} makes of one array of {@code saveAsObjectFile}. */
  private static byte[] serialized(byte[][] group) {
    try {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
        out.writeObject(group);
      }
      return bytes.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static boolean contains(byte[] tags, byte b) {
    for (byte x : tags) {
      if (x == b) {
        return true;
      }
    }
    return false;
  }

  /** The partition's record of {@link #write}'s result ({@code digests}: of its frames). */
  static byte[] summary(int pid, List<byte[]> digests, List<byte[]> back) {
    String digest = combined(digests);
    int size = 4 + 4 + 64 + 4;
    for (byte[] f : back) {
      size += 4 + f.length;
    }
    ByteBuffer b = ByteBuffer.allocate(size);
    b.putInt(pid).putInt(digests.size()).put(digest.getBytes(StandardCharsets.US_ASCII));
    b.putInt(back.size());
    for (byte[] f : back) {
      b.putInt(f.length).put(f);
    }
    return b.array();
  }

  static byte[] sha256(byte[] frame) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(frame);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** sha256 over the sorted sha256 of each frame, hex (the Python {@code frames_digest}). */
  static String combined(List<byte[]> digests) {
    byte[][] each = digests.toArray(new byte[0][]);
    Arrays.sort(each, Arrays::compareUnsigned);
    MessageDigest all;
    try {
      all = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    for (byte[] d : each) {
      all.update(d);
    }
    StringBuilder hex = new StringBuilder(64);
    for (byte x : all.digest()) {
      hex.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
    }
    return hex.toString();
  }

  /**
   * A pickled list of {@code (pid, frame)} tuples (protocol 4 opcodes: PROTO, EMPTY_LIST,
   * MARK, per item BININT, BINBYTES or BINBYTES8, TUPLE2, then APPENDS, STOP), what
   * {@code pickle.dumps([(pid, frame), ...])} loads back as.
   */
  static byte[] pickle(int pid, List<byte[]> frames) {
    int size = 2 + 1 + 1 + 1 + 1;
    for (byte[] f : frames) {
      size += 5 + 9 + f.length + 1;
    }
    ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    b.put((byte) 0x80).put((byte) 4).put((byte) ']').put((byte) '(');
    for (byte[] f : frames) {
      b.put((byte) 'J').putInt(pid);
      b.put((byte) 0x8e).putLong(f.length).put(f);     // BINBYTES8: any length
      b.put((byte) 0x86);                              // TUPLE2
    }
    b.put((byte) 'e').put((byte) '.');
    return Arrays.copyOf(b.array(), b.position());
  }
}
