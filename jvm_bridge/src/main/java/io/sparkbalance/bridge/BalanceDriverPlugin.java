package io.sparkbalance.bridge;

import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

import com.codahale.metrics.Counter;
import org.slf4j.LoggerFactory;

import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.ui.SparkUI;
import org.apache.spark.util.kvstore.KVStore;

/**
 * Driver side of {@link BalancePlugin}: metrics, the status-store listener and the UI tab.
 *
 * <p>Uses two {@code private[spark]} members, public in bytecode and stable since Spark 3.0:
 * {@code SparkContext.listenerBus()} (to post records and add the listener to the status queue,
 * as Spark's SQL tab does) and {@code SparkContext.statusStore()} (the store the UI reads).
 */
public final class BalanceDriverPlugin implements DriverPlugin {
  private SparkContext sc;
  private BalanceMetrics metrics;
  private final AtomicLong nextId = new AtomicLong(0);
  /** Ids already counted, oldest first: a record pushed again (its measured loads filled in
   * when its stage completed) updates the stored row but is not counted twice in the metrics. */
  private final Set<Long> counted = new LinkedHashSet<>();
  private static final int COUNTED_IDS = 10_000;

  @Override
  public Map<String, String> init(SparkContext sc, PluginContext ctx) {
    this.sc = sc;
    int max = ctx.conf().getInt(BalancePlugin.MAX_RECORDS_CONF, BalancePlugin.DEFAULT_MAX_RECORDS);
    KVStore store = sc.statusStore().store();
    BalanceStoreListener listener = new BalanceStoreListener(store, max);
    metrics = new BalanceMetrics(ctx.metricRegistry(), this::droppedEvents);
    sc.listenerBus().addToStatusQueue(listener);
    if (sc.ui().isDefined()) {
      SparkUI ui = sc.ui().get();
      try {
        ui.attachTab(new BalanceTab(ui, store, max));
        BalanceTab.serveWithoutRedirect(ui);
      } catch (IllegalStateException e) {  // no pages for this Spark: metrics and records go on
        LoggerFactory.getLogger(BalanceDriverPlugin.class).warn(e.getMessage());
      }
    }
    BalancePlugin.setActive(this);
    return Collections.emptyMap();  // no extra executor conf: there is no executor side
  }

  @Override
  public void shutdown() {
    BalancePlugin.clearActive(this);
  }

  BalanceMetrics metrics() {
    return metrics;
  }

  private long droppedEvents() {
    SparkContext c = sc;
    if (c == null) return 0L;
    Counter n = c.listenerBus().metrics().metricRegistry().getCounters()
        .get("queue." + BalanceMetrics.LISTENER_QUEUE + ".numDroppedEvents");
    return n == null ? 0L : n.getCount();
  }

  long post(String json) {
    BalanceRecord r = BalanceRecord.parse(json);
    Long given = r.integer("id");
    long id;
    if (given == null) {
      id = nextId.getAndIncrement();
      r.mutableNode().put("id", id);
    } else {
      id = given;
      nextId.accumulateAndGet(id + 1, Math::max);
    }
    if (!r.has("time")) r.mutableNode().put("time", System.currentTimeMillis() / 1000.0);
    if (firstPost(id)) metrics.update(r);
    sc.listenerBus().post(new BalanceEvent(r.node()));
    return id;
  }

  private synchronized boolean firstPost(long id) {
    if (!counted.add(id)) return false;
    if (counted.size() > COUNTED_IDS) {
      Long oldest = counted.iterator().next();
      counted.remove(oldest);
    }
    return true;
  }

  void flush(long timeoutMillis) throws TimeoutException {
    sc.listenerBus().waitUntilEmpty(timeoutMillis);
  }
}
