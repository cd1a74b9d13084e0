package io.sparkbalance.bridge;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.api.java.JavaSparkContext;

/**
 * The calling thread's Spark local properties set, and what they were read back, in one
 * driver call: labelling a job group (its id, description and interrupt flag) and putting
 * the caller's labels back took one py4j round trip per property read, set and restored.
 *
 * <p>Keys and values travel as one text, each item {@code -} (null: the property is
 * removed) or {@code <length>:<characters>}, keys and values alternating; {@link #swap}
 * answers with the old values in the same form. Setting the old values back is another
 * {@code swap}.
 */
public final class LocalProperties {
  private LocalProperties() {}

  /**
   * Sets each key of {@code pairs} to its value on the calling thread ({@code
   * JavaSparkContext.setLocalProperty}, in order; null removes it) and returns the values
   * they had, encoded.
   */
  public static String swap(JavaSparkContext jsc, String pairs) {
    List<String> items = decode(pairs);
    if (items.size() % 2 != 0) {
      throw new IllegalArgumentException("LocalProperties.swap: keys and values unpaired");
    }
    StringBuilder old = new StringBuilder();
    for (int i = 0; i < items.size(); i += 2) {
      String key = items.get(i);
      if (key == null) {
        throw new IllegalArgumentException("LocalProperties.swap: a null key");
      }
      append(old, jsc.getLocalProperty(key));
      jsc.setLocalProperty(key, items.get(i + 1));
    }
    return old.toString();
  }

  /** {@code text}'s items (see the class comment). */
  static List<String> decode(String text) {
    List<String> out = new ArrayList<>();
    int i = 0;
    while (i < text.length()) {
      if (text.charAt(i) == '-') {
        out.add(null);
        i++;
        continue;
      }
      int colon = text.indexOf(':', i);
      if (colon < 0) {
        throw new IllegalArgumentException("LocalProperties: bad item at " + i);
      }
      int n = Integer.parseInt(text.substring(i, colon));
      out.add(text.substring(colon + 1, colon + 1 + n));
      i = colon + 1 + n;
    }
    return out;
  }

  private static void append(StringBuilder out, String value) {
    if (value == null) {
      out.append('-');
    } else {
      out.append(value.length()).append(':').append(value);
    }
  }
}
