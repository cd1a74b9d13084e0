package io.sparkbalance.bridge;

import java.util.concurrent.TimeoutException;

import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * The sparkbalance Spark plugin: a metrics source, a "Balance" UI tab and balance records in
 * the event log. Enable with {@code spark.plugins=io.sparkbalance.bridge.BalancePlugin} and the
 * bridge jar on {@code spark.jars} (Python: {@code sparkbalance.spark.report.balance_log.configure}).
 *
 * <p>Python pushes one record per balanced operation with {@link #post(String)}: one py4j
 * call carrying the whole record as JSON (never one call per key or per partition). The driver
 * plugin updates the metrics at once and posts the record as a {@link BalanceEvent} on the
 * listener bus, so the event log keeps it and the History Server can rebuild the tab
 * ({@link BalanceHistoryPlugin}). Executors need nothing: there is no executor plugin.
 */
public class BalancePlugin implements SparkPlugin {
  /** Maximum number of records the UI store keeps (oldest dropped first). */
  public static final String MAX_RECORDS_CONF = "spark.sparkbalance.ui.maxRecords";
  /** Default of {@link #MAX_RECORDS_CONF}: a long stream cannot exhaust driver memory. */
  public static final int DEFAULT_MAX_RECORDS = 3000;

  private static volatile BalanceDriverPlugin active;

  @Override
  public DriverPlugin driverPlugin() {
    return new BalanceDriverPlugin();
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return null;
  }

  static void setActive(BalanceDriverPlugin plugin) {
    active = plugin;
  }

  static void clearActive(BalanceDriverPlugin plugin) {
    if (active == plugin) active = null;
  }

  /** True while a SparkContext of this JVM runs with the plugin enabled. */
  public static boolean isActive() {
    return active != null;
  }

  /**
   * Record one balanced operation.
   *
   * @param json one JSON object (the fields are listed in {@code sparkbalance/spark/report/balance_log.py});
   *     an {@code "id"} field is kept, a missing one is assigned
   * @return the record's id, or -1 when no SparkContext with the plugin is running
   * @throws IllegalArgumentException when {@code json} is not a JSON object
   */
  public static long post(String json) {
    BalanceDriverPlugin p = active;
    return p == null ? -1L : p.post(json);
  }

  /**
   * Wait until the listener bus has delivered every posted record (tests, and before reading
   * the tab right after posting).
   *
   * @return false when the bus did not drain within {@code timeoutMillis} or no plugin runs
   */
  public static boolean flush(long timeoutMillis) {
    BalanceDriverPlugin p = active;
    if (p == null) return false;
    try {
      p.flush(timeoutMillis);
      return true;
    } catch (TimeoutException e) {
      return false;
    }
  }

  /** Current metric values as a JSON object (name to number), for tests and debugging. */
  public static String metricsJson() {
    BalanceDriverPlugin p = active;
    return p == null ? "{}" : p.metrics().toJson();
  }
}
