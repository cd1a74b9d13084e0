package io.sparkbalance.bridge;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Read-only view of one balance record (a JSON object written by
 * {@code sparkbalance/spark/report/balance_log.py}); absent fields read as null / empty.
 *
 * <p>Loads are in the planner's cost unit (records, or seconds when the listener turned counts
 * into time). {@code max_*}/{@code avg_*} default to the max and mean of {@code loads_*}, so
 * a record may carry either. A record with {@code plan_seconds} is a plan; one with
 * {@code keys_moved > 0} or {@code migration_seconds} is a migration (a migration is reported in
 * exactly one record: its batch's, or a record of kind {@code migration}).
 */
public final class BalanceRecord {
  static final ObjectMapper MAPPER = new ObjectMapper();

  private final JsonNode node;

  public BalanceRecord(JsonNode node) {
    if (node == null || !node.isObject()) {
      throw new IllegalArgumentException("a balance record must be a JSON object, got " + node);
    }
    this.node = node;
  }

  /** Parse one record; the error names the bad input. */
  public static BalanceRecord parse(String json) {
    JsonNode n;
    try {
      n = MAPPER.readTree(json);
    } catch (Exception e) {
      String head = json == null ? "null" : json.substring(0, Math.min(json.length(), 80));
      throw new IllegalArgumentException("not a JSON balance record: " + head + " (" + e.getMessage() + ")");
    }
    return new BalanceRecord(n);
  }

  public JsonNode node() { return node; }

  ObjectNode mutableNode() { return (ObjectNode) node; }

  public String text(String field) {
    JsonNode v = node.get(field);
    if (v == null || v.isNull()) return null;
    return v.isTextual() ? v.textValue() : v.toString();
  }

  /** A number field, or null when absent, null or not numeric. */
  public Double num(String field) {
    JsonNode v = node.get(field);
    return v != null && v.isNumber() ? v.doubleValue() : null;
  }

  public Long integer(String field) {
    JsonNode v = node.get(field);
    return v != null && v.isNumber() ? v.longValue() : null;
  }

  public boolean has(String field) {
    JsonNode v = node.get(field);
    return v != null && !v.isNull();
  }

  public long id() { Long v = integer("id"); return v == null ? -1L : v; }
  /** Epoch seconds. */
  public Double time() { return num("time"); }
  public String kind() { String k = text("kind"); return k == null ? "" : k; }
  public String operation() { return text("operation"); }
  public String key() { return text("key"); }
  public String strategy() { return text("strategy"); }
  public String planner() { return text("planner"); }
  /** Keyed-state operator name: records of one operator form its per-batch timeline. */
  public String operator() { return text("operator"); }
  public Long batch() { return integer("batch"); }
  public String layout() { return text("layout"); }
  public Long tableSize() { return integer("table_size"); }
  public Double lowerBound() { return num("lower_bound"); }
  public Double planSeconds() { return num("plan_seconds"); }
  public Double migrationSeconds() { return num("migration_seconds"); }
  public Long keysMoved() { return integer("keys_moved"); }
  public Long bytesMoved() { return integer("bytes_moved"); }
  public String description() { return text("description"); }

  /** The record's hot keys (an array of {key, share, load, before, after}), or empty. */
  public List<JsonNode> hotKeys(String field) {
    JsonNode v = node.get(field);
    if (v == null || !v.isArray()) return Collections.emptyList();
    List<JsonNode> out = new ArrayList<>(v.size());
    for (JsonNode x : v) if (x.isObject()) out.add(x);
    return out;
  }

  /** How "before" was placed (Spark's hash, the current function, ...), or null. */
  public String beforePlacement() { return text("before_placement"); }
  /** Why the loads are missing (a splitting strategy that gathers no statistics), or null. */
  public String loadsNote() { return text("loads_note"); }
  /** The batch that decided the migration this record's batch carried, or null. */
  public Long movedForBatch() { return integer("moved_for_batch"); }

  public List<Double> loads(String which) {
    JsonNode v = node.get("loads_" + which);
    if (v == null || !v.isArray()) return Collections.emptyList();
    List<Double> out = new ArrayList<>(v.size());
    for (JsonNode x : v) out.add(x.isNumber() ? x.doubleValue() : Double.NaN);
    return out;
  }

  public Long numPartitions() {
    Long n = integer("num_partitions");
    if (n != null) return n;
    int b = loads("before").size(), a = loads("after").size();
    return Math.max(a, b) > 0 ? (long) Math.max(a, b) : null;
  }

  /** {@code max_<which>}, else the max of {@code loads_<which>}; which is before or after. */
  public Double max(String which) {
    Double v = num("max_" + which);
    if (v != null) return v;
    List<Double> l = loads(which);
    if (l.isEmpty()) return null;
    double m = Double.NEGATIVE_INFINITY;
    for (double x : l) m = Math.max(m, x);
    return m;
  }

  /** {@code avg_<which>}, else the mean of {@code loads_<which>}. */
  public Double avg(String which) {
    Double v = num("avg_" + which);
    if (v != null) return v;
    List<Double> l = loads(which);
    if (l.isEmpty()) return null;
    double s = 0;
    for (double x : l) s += x;
    return s / l.size();
  }

  /** max/avg (1 = perfectly even), or null. */
  public Double imbalance(String which) {
    Double m = max(which), a = avg(which);
    return m == null || a == null || a == 0.0 ? null : m / a;
  }

  public List<Long> jobIds() {
    JsonNode v = node.get("job_ids");
    if (v == null || !v.isArray()) return Collections.emptyList();
    List<Long> out = new ArrayList<>(v.size());
    for (JsonNode x : v) if (x.isNumber()) out.add(x.longValue());
    return out;
  }

  public boolean isPlan() { return planSeconds() != null; }

  public boolean isMigration() {
    Long k = keysMoved();
    return "migration".equals(kind()) || (k != null && k > 0) || migrationSeconds() != null;
  }

  public String toJson() { return node.toString(); }
}
