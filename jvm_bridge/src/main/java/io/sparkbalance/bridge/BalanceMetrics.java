package io.sparkbalance.bridge;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Gauge;
import com.codahale.metrics.Histogram;
import com.codahale.metrics.MetricRegistry;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The plugin's metrics source (Dropwizard, in Spark's metrics system as
 * {@code plugin.io.sparkbalance.bridge.BalancePlugin.<name>}).
 *
 * <p>Gauges read the last plan (0 before the first): {@code lastMaxLoad}, {@code lastAvgLoad}
 * (after the plan), {@code lastMaxLoadBefore}, {@code lastAvgLoadBefore}, {@code lastLowerBound},
 * {@code lastTableSize}; {@code listenerDroppedEvents} is Spark's drop counter of the
 * sparkbalance listener queue. Counters: {@code records}, {@code plans}, {@code migrations},
 * {@code keysMoved}, {@code bytesMoved}. Histograms (microseconds, because Dropwizard histograms
 * hold longs and plans often take less than a millisecond): {@code planMicros},
 * {@code migrationMicros}. All are registered before Spark copies the registry into its
 * metrics system (after {@code DriverPlugin.init}); later registrations would not show.
 */
public final class BalanceMetrics {
  /** Listener queue of {@code sparkbalance.spark.metrics.listener} (its {@code LISTENER_QUEUE}). */
  public static final String LISTENER_QUEUE = "sparkbalance";

  private final Counter records, plans, migrations, keysMoved, bytesMoved;
  private final Histogram planMicros, migrationMicros;
  private final LongSupplier dropped;
  private volatile double maxLoad, avgLoad, maxLoadBefore, avgLoadBefore, lowerBound;
  private volatile long tableSize;

  public BalanceMetrics(MetricRegistry reg, LongSupplier droppedEvents) {
    this.dropped = droppedEvents;
    records = reg.counter("records");
    plans = reg.counter("plans");
    migrations = reg.counter("migrations");
    keysMoved = reg.counter("keysMoved");
    bytesMoved = reg.counter("bytesMoved");
    planMicros = reg.histogram("planMicros");
    migrationMicros = reg.histogram("migrationMicros");
    reg.register("lastMaxLoad", (Gauge<Double>) () -> maxLoad);
    reg.register("lastAvgLoad", (Gauge<Double>) () -> avgLoad);
    reg.register("lastMaxLoadBefore", (Gauge<Double>) () -> maxLoadBefore);
    reg.register("lastAvgLoadBefore", (Gauge<Double>) () -> avgLoadBefore);
    reg.register("lastLowerBound", (Gauge<Double>) () -> lowerBound);
    reg.register("lastTableSize", (Gauge<Long>) () -> tableSize);
    reg.register("listenerDroppedEvents", (Gauge<Long>) dropped::getAsLong);
  }

  private static double or0(Double d) { return d == null || d.isNaN() ? 0.0 : d; }

  private static long micros(double seconds) { return Math.round(seconds * 1e6); }

  /** Account one record (called once per posted record, on the posting thread). */
  public synchronized void update(BalanceRecord r) {
    records.inc();
    if (r.isPlan()) {
      plans.inc();
      planMicros.update(micros(r.planSeconds()));
      Double after = r.max("after");
      maxLoad = or0(after != null ? after : r.max("before"));
      Double avgAfter = r.avg("after");
      avgLoad = or0(avgAfter != null ? avgAfter : r.avg("before"));
      maxLoadBefore = or0(r.max("before"));
      avgLoadBefore = or0(r.avg("before"));
      lowerBound = or0(r.lowerBound());
      Long t = r.tableSize();
      tableSize = t == null ? 0L : t;
    }
    if (r.isMigration()) {
      migrations.inc();
      Long k = r.keysMoved(), b = r.bytesMoved();
      if (k != null) keysMoved.inc(k);
      if (b != null) bytesMoved.inc(b);
      Double s = r.migrationSeconds();
      if (s != null) migrationMicros.update(micros(s));
    }
  }

  /** The current values, one JSON object (histograms as their count and max). */
  public synchronized String toJson() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("records", records.getCount());
    m.put("plans", plans.getCount());
    m.put("migrations", migrations.getCount());
    m.put("keysMoved", keysMoved.getCount());
    m.put("bytesMoved", bytesMoved.getCount());
    m.put("planMicros.count", planMicros.getCount());
    m.put("planMicros.max", planMicros.getSnapshot().getMax());
    m.put("migrationMicros.count", migrationMicros.getCount());
    m.put("migrationMicros.max", migrationMicros.getSnapshot().getMax());
    m.put("lastMaxLoad", maxLoad);
    m.put("lastAvgLoad", avgLoad);
    m.put("lastMaxLoadBefore", maxLoadBefore);
    m.put("lastAvgLoadBefore", avgLoadBefore);
    m.put("lastLowerBound", lowerBound);
    m.put("lastTableSize", tableSize);
    m.put("listenerDroppedEvents", dropped.getAsLong());
    ObjectNode n = BalanceRecord.MAPPER.valueToTree(m);
    return n.toString();
  }
}
