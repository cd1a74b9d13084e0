package io.sparkbalance.bridge;

import org.apache.spark.util.kvstore.KVIndex;

/**
 * One record in Spark's application status store (the live UI's and the History Server's
 * {@code KVStore}), so the tab reads the same rows in both. Public fields and a no-argument
 * constructor: a disk-backed History Server store serializes rows with Jackson.
 */
public class BalanceRow {
  /** Natural key: the record id, increasing in posting order. */
  @KVIndex
  public long id;
  public String kind;
  /** Keyed-state operator (empty when none): the timeline of a detail page. */
  public String operator;
  /** The whole record as JSON (see {@link BalanceRecord}). */
  public String json;

  public BalanceRow() {}

  public BalanceRow(BalanceRecord r) {
    this.id = r.id();
    this.kind = r.kind();
    String op = r.operator();
    this.operator = op == null ? "" : op;
    this.json = r.toJson();
  }

  public BalanceRecord record() {
    return BalanceRecord.parse(json);
  }
}
