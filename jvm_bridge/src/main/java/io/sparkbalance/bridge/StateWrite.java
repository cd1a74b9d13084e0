package io.sparkbalance.bridge;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectOutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
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
    List<byte[]> kept = new ArrayList<>();
    List<byte[]> back = new ArrayList<>();
    while (it.hasNext()) {
      byte[] f = it.next();
      if (f.length > 0 && f[0] == tag) {
        kept.add(f);
      } else if (f.length > 0 && contains(collect, f[0])) {
        back.add(f);
      }
    }
    acc.add(summary(pid, kept, back));
    List<byte[]> batches = new ArrayList<>((kept.size() + BATCH - 1) / BATCH);
    for (int i = 0; i < kept.size(); i += BATCH) {
      batches.add(pickle(pid, kept.subList(i, Math.min(i + BATCH, kept.size()))));
    }
    List<byte[]> records = new ArrayList<>((batches.size() + BATCH - 1) / BATCH);
    for (int i = 0; i < batches.size(); i += BATCH) {
      records.add(serialized(batches.subList(i, Math.min(i + BATCH, batches.size()))
                                 .toArray(new byte[0][])));
    }
    return records.iterator();
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

  /** The partition's record of {@link #write}'s result. */
  static byte[] summary(int pid, List<byte[]> kept, List<byte[]> back) {
    String digest = digest(kept);
    int size = 4 + 4 + 64 + 4;
    for (byte[] f : back) {
      size += 4 + f.length;
    }
    ByteBuffer b = ByteBuffer.allocate(size);
    b.putInt(pid).putInt(kept.size()).put(digest.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
    b.putInt(back.size());
    for (byte[] f : back) {
      b.putInt(f.length).put(f);
    }
    return b.array();
  }

  /** sha256 over the sorted sha256 of each frame, hex (the Python {@code frames_digest}). */
  static String digest(List<byte[]> frames) {
    try {
      byte[][] each = new byte[frames.size()][];
      for (int i = 0; i < each.length; i++) {
        each[i] = MessageDigest.getInstance("SHA-256").digest(frames.get(i));
      }
      Arrays.sort(each, Arrays::compareUnsigned);
      MessageDigest all = MessageDigest.getInstance("SHA-256");
      for (byte[] d : each) {
        all.update(d);
      }
      StringBuilder hex = new StringBuilder(64);
      for (byte x : all.digest()) {
        hex.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
      }
      return hex.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
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
