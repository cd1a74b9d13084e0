package io.sparkbalance.bridge;


import org.slf4j.LoggerFactory;
import scala.collection.immutable.Nil$;

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
 * Spark's own SQL and streaming tabs. One class serves Spark 3.5 and 4.x: their
 * {@code createListeners} differ only in the return type (Scala 2.12 {@code collection.Seq},
 * 2.13 {@code immutable.Seq}), so it returns a {@code List} (a subtype of both) and also
 * implements {@link Scala212Listeners}, which makes javac emit a bridge method for each; the
 * list is built with {@code Nil.::}, whose bytecode signature both Scala lines share.
 */
public final class BalanceHistoryPlugin implements AppHistoryServerPlugin, Scala212Listeners {
  static int maxRecords(SparkConf conf) {
    return conf.getInt(BalancePlugin.MAX_RECORDS_CONF, BalancePlugin.DEFAULT_MAX_RECORDS);
  }

  @Override
  public scala.collection.immutable.List<SparkListener> createListeners(SparkConf conf,
      ElementTrackingStore store) {
    SparkListener listener = new BalanceStoreListener(store, maxRecords(conf));
    return Nil$.MODULE$.$colon$colon(listener);
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
    if (n == 0) return;
    try {
      ui.attachTab(new BalanceTab(ui, store, maxRecords(ui.conf())));
      BalanceTab.serveWithoutRedirect(ui);
    } catch (IllegalStateException e) {  // no pages for this Spark: the History Server goes on
      LoggerFactory.getLogger(BalanceHistoryPlugin.class).warn(e.getMessage());
    }
  }
}

/** Spark 3.5's {@code createListeners} signature (Scala 2.12 {@code collection.Seq}). */
interface Scala212Listeners {
  scala.collection.Seq<SparkListener> createListeners(SparkConf conf, ElementTrackingStore store);
}
