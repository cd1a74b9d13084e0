package io.sparkbalance.bridge;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;

import scala.reflect.ClassTag$;

/**
 * The key sample's prefixes counted in the JVM: one call from the driver's Python runs the
 * job over the chosen partitions of a key projection and returns the distinct (key, home)
 * pairs with their counts as one compact byte array.
 *
 * <p>The projection's columns are the key columns (integers, booleans, strings, binary)
 * followed by one INT column, the key's partition under Spark's hash placement. Each task
 * reads its partition's first {@code per} rows (the scan's iterator is left there, as
 * Spark's per-partition limit leaves it) and counts them; the driver merges the tasks'
 * counts. The projection's own query execution is run (the one its plan was read from: no
 * second planning), coalesced to {@code runs} partitions without a shuffle when it has more
 * (as {@code Dataset.coalesce} does).
 *
 * <p>Encoding (big-endian): rows read (int), distinct pairs (int), then per pair its count
 * (int), home (int) and each key column: a tag byte, then 1 = a long (8 bytes), 2 = UTF-8
 * text (int length, bytes), 3 = binary (int length, bytes), 4 = a boolean (1 byte).
 */
public final class KeyLook {
  private KeyLook() {}

  /**
   * The key projection of {@code df}: {@code selectExpr} of the expressions in {@code exprs}
   * (separated by {@code sep}) filtered by the SQL condition {@code where}, in one driver
   * call (PySpark's own building of it costs seven round trips).
   */
  public static Dataset<?> projection(Dataset<?> df, String exprs, String sep, String where) {
    return df.selectExpr(exprs.split(java.util.regex.Pattern.quote(sep), -1)).where(where);
  }

  /**
   * The text of {@code keys}'s executed plan (its query planned now, once: the sample reads
   * this same query execution).
   */
  public static String planText(Dataset<?> keys) {
    return keys.queryExecution().executedPlan().toString();
  }

  /** Partitions of {@code keys}'s planned query (its RDD built, no job). */
  public static int partitions(Dataset<?> keys) {
    return keys.queryExecution().toRdd().getNumPartitions();
  }

  /** Version of the encoding the Python side reads. */
  public static int protocol() {
    return 1;
  }

  /**
   * Counts of (key, home) over partitions {@code first .. end - 1} of {@code keys} coalesced
   * to {@code runs} partitions (not coalesced when it has that many or fewer), each read up
   * to {@code per} rows. One Spark job of one task per listed partition; null (and no job)
   * when a key column's type is not one this encoding holds (the caller reads the rows its
   * own way). With a {@code group}, the job runs in that job group with that description
   * and the thread's previous group, description and interrupt flag are restored after (as
   * the Python side's job group does, without its six driver round trips).
   */
  public static byte[] counts(Dataset<?> keys, int width, int runs, int per, int first,
                              int end, String group, String description) {
    DataType[] types = new DataType[width];
    StructField[] fields = keys.schema().fields();
    if (fields.length != width + 1) {
      throw new IllegalArgumentException("expected " + (width + 1) + " columns, got "
          + fields.length);
    }
    for (int i = 0; i < width; i++) {
      types[i] = fields[i].dataType();
      if (tag(types[i]) < 0) {
        return null;
      }
    }
    RDD<InternalRow> rdd = keys.queryExecution().toRdd();
    SparkContext sc = rdd.sparkContext();
    String[] old = new String[GROUP_PROPERTIES.length];
    for (int i = 0; i < old.length; i++) {
      old[i] = sc.getLocalProperty(GROUP_PROPERTIES[i]);
    }
    if (group != null) {
      sc.setJobGroup(group, description == null ? group : description, false);
    }
    try {
      return counted(rdd, types, runs, per, first, end);
    } finally {
      if (group != null) {
        for (int i = 0; i < old.length; i++) {
          sc.setLocalProperty(GROUP_PROPERTIES[i], old[i]);   // null: unset
        }
      }
    }
  }

  /** Spark's local properties a job group sets. */
  private static final String[] GROUP_PROPERTIES = {
    "spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel"};

  private static byte[] counted(RDD<InternalRow> rdd, DataType[] types, int runs, int per,
                                int first, int end) {
    JavaRDD<InternalRow> rows = JavaRDD.fromRDD(rdd, ClassTag$.MODULE$.apply(InternalRow.class));
    if (rows.getNumPartitions() > runs) {
      rows = rows.coalesce(runs);
    }
    int[] parts = new int[Math.max(0, end - first)];
    for (int i = 0; i < parts.length; i++) {
      parts[i] = first + i;
    }
    List<byte[]>[] got = rows.mapPartitions(new Prefix(types, per)).collectPartitions(parts);
    Map<ByteBuffer, int[]> merged = new HashMap<>();
    long read = 0;
    for (List<byte[]> part : got) {
      for (byte[] chunk : part) {
        ByteBuffer in = ByteBuffer.wrap(chunk);
        read += in.getInt();
        int distinct = in.getInt();
        for (int j = 0; j < distinct; j++) {
          int count = in.getInt();
          int len = in.getInt();
          byte[] key = new byte[len];
          in.get(key);
          merged.computeIfAbsent(ByteBuffer.wrap(key), k -> new int[1])[0] += count;
        }
      }
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeInt((int) read);
      out.writeInt(merged.size());
      for (Map.Entry<ByteBuffer, int[]> e : merged.entrySet()) {
        out.writeInt(e.getValue()[0]);
        out.write(e.getKey().array());
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    return bytes.toByteArray();
  }

  static byte tag(DataType t) {
    if (t instanceof ByteType || t instanceof ShortType || t instanceof IntegerType
        || t instanceof LongType) {
      return 1;
    }
    if (t instanceof StringType) {
      return 2;
    }
    if (t instanceof BinaryType) {
      return 3;
    }
    if (t instanceof BooleanType) {
      return 4;
    }
    return -1;
  }

  /** One task: the first {@code per} rows of its partition, counted by (home, key). */
  static final class Prefix implements FlatMapFunction<Iterator<InternalRow>, byte[]> {
    private static final long serialVersionUID = 1L;
    private final DataType[] types;
    private final int per;

    Prefix(DataType[] types, int per) {
      this.types = types;
      this.per = per;
    }

    @Override
    public Iterator<byte[]> call(Iterator<InternalRow> rows) throws IOException {
      int width = types.length;
      byte[] tags = new byte[width];
      for (int i = 0; i < width; i++) {
        tags[i] = tag(types[i]);
      }
      Map<ByteBuffer, int[]> counts = new HashMap<>();
      ByteArrayOutputStream key = new ByteArrayOutputStream();
      DataOutputStream out = new DataOutputStream(key);
      int read = 0;
      while (read < per && rows.hasNext()) {
        InternalRow row = rows.next();   // a reused row: read at once
        key.reset();
        out.writeInt(row.getInt(width));
        for (int i = 0; i < width; i++) {
          out.writeByte(tags[i]);
          switch (tags[i]) {
            case 1:
              out.writeLong(integral(row, i, types[i]));
              break;
            case 2: {
              byte[] b = row.getUTF8String(i).getBytes();
              out.writeInt(b.length);
              out.write(b);
              break;
            }
            case 3: {
              byte[] b = row.getBinary(i);
              out.writeInt(b.length);
              out.write(b);
              break;
            }
            default:
              out.writeBoolean(row.getBoolean(i));
          }
        }
        out.flush();
        counts.computeIfAbsent(ByteBuffer.wrap(key.toByteArray()), k -> new int[1])[0]++;
        read++;
      }
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      DataOutputStream res = new DataOutputStream(bytes);
      res.writeInt(read);
      res.writeInt(counts.size());
      for (Map.Entry<ByteBuffer, int[]> e : counts.entrySet()) {
        byte[] k = e.getKey().array();
        res.writeInt(e.getValue()[0]);
        res.writeInt(k.length);
        res.write(k);
      }
      res.flush();
      List<byte[]> one = new ArrayList<>(1);
      one.add(bytes.toByteArray());
      return one.iterator();
    }

    private static long integral(InternalRow row, int i, DataType t) {
      if (t instanceof ByteType) {
        return row.getByte(i);
      }
      if (t instanceof ShortType) {
        return row.getShort(i);
      }
      if (t instanceof IntegerType) {
        return row.getInt(i);
      }
      return row.getLong(i);
    }
  }
}
