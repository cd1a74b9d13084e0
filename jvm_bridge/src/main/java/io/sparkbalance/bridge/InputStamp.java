package io.sparkbalance.bridge;

import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.spark.sql.Dataset;

/**
 * What a planned query reads, as a short text that changes when its input does: the key
 * sample uses it to tell an unchanged input (the same files, the same sizes) from one that
 * merely has the same plan text, so a sample of the same query over the same input can be
 * used again instead of read again.
 *
 * <p>Every leaf of the executed plan must be one whose content the stamp pins down: a file
 * scan (its file index's files, sorted, and their total size: a write adds or replaces
 * files, and an in-place rewrite changes sizes) or a {@code Range} (its text in the plan
 * is its rows). Any other leaf (an in-memory relation, a local table, an RDD scan, a data
 * source v2 scan, a cached relation) gives {@code null}: no stamp, the sample is read
 * again. The plan is walked by reflection (its {@code children} and a file scan's relation
 * are Scala types whose signatures differ between Spark 3.5 and 4.x).
 */
public final class InputStamp {
  private InputStamp() {}

  /**
   * {@code ds}'s executed plan's text (as {@code KeyLook.planText}), then {@link #SEP}, then
   * its stamp (empty when it has none): the sample's plan and stamp in one driver call.
   */
  public static String planned(Dataset<?> ds) {
    String stamp = of(ds);
    return ds.queryExecution().executedPlan().toString() + SEP + (stamp == null ? "" : stamp);
  }

  /** Between the plan's text and the stamp in {@link #planned}'s answer. */
  public static final String SEP = "\u0000";

  /** The stamp of {@code ds}'s executed plan's leaves, or null when a leaf has none. */
  public static String of(Dataset<?> ds) {
    try {
      List<String> parts = new ArrayList<>();
      return walk(ds.queryExecution().executedPlan(), parts) ? String.join("|", parts) : null;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  private static boolean walk(Object node, List<String> parts)
      throws ReflectiveOperationException {
    String name = node.getClass().getSimpleName();
    if (name.equals("AdaptiveSparkPlanExec")) {
      return walk(call(node, "executedPlan"), parts);
    }
    if (name.equals("InMemoryTableScanExec")) {
      return false;                       // a cache's content is not its plan's
    }
    scala.collection.Iterator<?> it = ((scala.collection.Iterable<?>) call(node, "children"))
        .iterator();
    boolean leaf = true;
    while (it.hasNext()) {
      leaf = false;
      if (!walk(it.next(), parts)) {
        return false;
      }
    }
    if (!leaf) {
      return true;
    }
    if (name.equals("RangeExec")) {
      parts.add("range");                 // its text (start, end, step, splits) is its rows
      return true;
    }
    if (name.equals("FileSourceScanExec")) {
      Object index = call(call(node, "relation"), "location");
      String[] files = ((String[]) call(index, "inputFiles")).clone();
      Arrays.sort(files);
      long bytes = (Long) call(index, "sizeInBytes");
      parts.add("files:" + files.length + ":" + bytes + ":" + digest(files));
      return true;
    }
    return false;
  }

  private static String digest(String[] files) throws ReflectiveOperationException {
    try {
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      for (String f : files) {
        md.update(f.getBytes(StandardCharsets.UTF_8));
        md.update((byte) 0);
      }
      StringBuilder hex = new StringBuilder();
      for (byte b : Arrays.copyOf(md.digest(), 12)) {
        hex.append(String.format("%02x", b));
      }
      return hex.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static Object call(Object target, String method) throws ReflectiveOperationException {
    Method m = target.getClass().getMethod(method);
    return m.invoke(target);
  }
}
