package io.sparkbalance.bridge;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;

import org.apache.spark.serializer.DeserializationStream;
import org.apache.spark.serializer.SerializationStream;
import org.apache.spark.serializer.Serializer;
import org.apache.spark.serializer.SerializerInstance;

import scala.reflect.ClassTag;

/**
 * The serializer of the zero-pass shuffle: PySpark's shuffle records are pairs of a
 * {@code Long} (the partition hash) and a {@code byte[]} (a pickled chunk), and this writes
 * each object as one tag byte and its raw bytes, with no state carried between records.
 *
 * <p>Having no state between records is what Spark calls <em>relocatable</em>: the
 * serialized records of a map output can be cut and concatenated at record boundaries. It
 * lets the map tasks use the serialized sort ({@code UnsafeShuffleWriter}) and, above all,
 * lets a reduce task that owns a contiguous range of key groups fetch that range from each
 * map output as one block ({@code ShuffleBlockBatchId}, the fetch adaptive execution uses
 * for coalesced partitions) instead of one block per group. Spark's default
 * {@code JavaSerializer} is not relocatable; Kryo is, but caps a record at
 * {@code spark.kryoserializer.buffer.max} and obeys a user's registration settings.
 */
public final class PairSerializer extends Serializer implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final int LONG = 1;
  private static final int BYTES = 2;

  @Override
  public SerializerInstance newInstance() {
    return new Instance();
  }

  @Override
  public boolean supportsRelocationOfSerializedObjects() {
    return true;
  }

  static void write(DataOutputStream out, Object t) throws IOException {
    if (t instanceof Long) {
      out.writeByte(LONG);
      out.writeLong((Long) t);
    } else if (t instanceof byte[]) {
      byte[] b = (byte[]) t;
      out.writeByte(BYTES);
      out.writeInt(b.length);
      out.write(b);
    } else {
      throw new IllegalArgumentException("sparkbalance PairSerializer writes Long and byte[] "
          + "(PySpark's shuffle records); got " + (t == null ? "null" : t.getClass().getName()));
    }
  }

  static Object read(DataInputStream in) throws IOException {
    int tag = in.read();
    if (tag < 0) {
      throw new EOFException();
    }
    if (tag == LONG) {
      return in.readLong();
    }
    if (tag == BYTES) {
      byte[] b = new byte[in.readInt()];
      in.readFully(b);
      return b;
    }
    throw new IOException("sparkbalance PairSerializer: unknown record tag " + tag
        + " (the shuffle was not written by this serializer, or its data is corrupt)");
  }

  static final class Instance extends SerializerInstance {
    @Override
    public <T> ByteBuffer serialize(T t, ClassTag<T> tag) {
      java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
      try (DataOutputStream out = new DataOutputStream(bytes)) {
        write(out, t);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return ByteBuffer.wrap(bytes.toByteArray());
    }

    @Override
    public <T> T deserialize(ByteBuffer bytes, ClassTag<T> tag) {
      byte[] b = new byte[bytes.remaining()];
      bytes.duplicate().get(b);
      try (DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(b))) {
        @SuppressWarnings("unchecked")
        T t = (T) read(in);
        return t;
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public <T> T deserialize(ByteBuffer bytes, ClassLoader loader, ClassTag<T> tag) {
      return deserialize(bytes, tag);
    }

    @Override
    public SerializationStream serializeStream(OutputStream s) {
      return new Out(s);
    }

    @Override
    public DeserializationStream deserializeStream(InputStream s) {
      return new In(s);
    }
  }

  static final class Out extends SerializationStream {
    private final DataOutputStream out;

    Out(OutputStream s) {
      out = new DataOutputStream(s);
    }

    @Override
    public <T> SerializationStream writeObject(T t, ClassTag<T> tag) {
      try {
        write(out, t);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return this;
    }

    @Override
    public void flush() {
      unchecked(out::flush);
    }

    @Override
    public void close() {
      unchecked(out::close);
    }
  }

  static final class In extends DeserializationStream {
    private final DataInputStream in;

    In(InputStream s) {
      in = new DataInputStream(s);
    }

    // EOFException at the end of the stream is how asKeyValueIterator learns it is done,
    // so it passes unwrapped (Scala code may throw checked exceptions; Java must sneak it).
    @Override
    public <T> T readObject(ClassTag<T> tag) {
      try {
        @SuppressWarnings("unchecked")
        T t = (T) read(in);
        return t;
      } catch (IOException e) {
        throw PairSerializer.<RuntimeException>sneaky(e);
      }
    }

    @Override
    public void close() {
      unchecked(in::close);
    }
  }

  interface IoAction {
    void run() throws IOException;
  }

  /** Streams' flush and close: Spark's stream methods declare no IOException. */
  static void unchecked(IoAction action) {
    try {
      action.run();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @SuppressWarnings("unchecked")
  private static <E extends Throwable> E sneaky(Throwable e) throws E {
    throw (E) e;
  }
}
