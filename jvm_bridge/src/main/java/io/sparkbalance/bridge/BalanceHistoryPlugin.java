package io.sparkbalance.bridge;

import java.util.List;

import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

import org.apache.spark.SparkConf;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.status.AppHistoryServerPlugin;
import org.apache.spark.status.ElementTrackingStore;
import org.apache.spark.ui.SparkUI;
import org.apache.spark.util.kvstore.KVStore;

/**
 * History Server side of {@link BalancePlugin}, found by the service loader
 * ({@code META-INF/services/org.apache.spark.status.AppHistoryServerPlugin} in the bridge jar;
 * put the jar on the History Server's class path, e.g. {@code SPARK_DAEMON_CLASSPATH}).
 * Replaying an event log feeds the {@link BalanceEvent}s to a {@link BalanceStoreListener};
 * the tab is attached only to applications that recorded something.
 *
 * <p>{@code AppHistoryServerPlugin} is {@code private[spark]} (public in bytecode), as for
 * Spark's own SQL and streaming tabs. On Spark 3.5 (Scala 2.12) build the listener list with
 * {@code scala.collection.JavaConverters} instead of {@code scala.jdk.javaapi}.
 */
public final class BalanceHistoryPlugin implements AppHistoryServerPlugin {
  static int maxRecords(SparkConf conf) {
    return conf.getInt(BalancePlugin.MAX_RECORDS_CONF, BalancePlugin.DEFAULT_MAX_RECORDS);
  }

  @Override
  public Seq<SparkListener> createListeners(SparkConf conf, ElementTrackingStore store) {
    List<SparkListener> l = List.of(new BalanceStoreListener(store, maxRecords(conf)));
    return CollectionConverters.asScala(l).toList();
  }

  /** The service loader makes a new instance per call, so nothing is kept between the two. */
  @Override
  public void setupUI(SparkUI ui) {
    KVStore store = ui.store().store();
    long n;
    try {
      n = store.count(BalanceRow.class);
    } catch (Exception e) {
      throw new IllegalStateException("could not count balance records", e);
    }
    if (n > 0) ui.attachTab(new BalanceTab(ui, store, maxRecords(ui.conf())));
  }
}
