package io.sparkbalance.bridge;

import java.util.ArrayDeque;

import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.util.kvstore.KVStore;

/**
 * Writes every {@link BalanceEvent} into the application status store as a {@link BalanceRow}
 * and keeps at most {@code maxRecords} rows there, dropping the oldest, so a long stream cannot
 * exhaust driver (or History Server) memory. Runs on the status queue of a live application
 * and on the History Server's replay; one thread delivers the events of a queue.
 */
public final class BalanceStoreListener extends SparkListener {
  private final KVStore store;
  private final int maxRecords;
  private final ArrayDeque<Long> ids = new ArrayDeque<>();

  /**
   * @param maxRecords rows kept; must be &gt;= 1
   */
  public BalanceStoreListener(KVStore store, int maxRecords) {
    if (maxRecords < 1) {
      throw new IllegalArgumentException(
          BalancePlugin.MAX_RECORDS_CONF + "=" + maxRecords + "; expected >= 1");
    }
    this.store = store;
    this.maxRecords = maxRecords;
  }

  @Override
  public void onOtherEvent(SparkListenerEvent event) {
    if (!(event instanceof BalanceEvent)) return;
    BalanceRecord r = new BalanceRecord(((BalanceEvent) event).record());
    // An exception here is caught and logged by the listener bus, which goes on.
    try {
      store.write(new BalanceRow(r));
      // A record pushed again under its id (measured loads filled in) replaces its row in
      // place: listed once, so evicting it later deletes it once.
      if (!ids.contains(r.id())) ids.addLast(r.id());
      while (ids.size() > maxRecords) {
        store.delete(BalanceRow.class, ids.removeFirst());
      }
    } catch (Exception e) {
      throw new IllegalStateException("could not store balance record " + r.id(), e);
    }
  }
}
