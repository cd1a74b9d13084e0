package io.sparkbalance.bridge;

import java.math.BigDecimal;
import java.math.MathContext;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * HTML of the "Balance" tab as plain strings (wrapped in {@code scala.xml.Unparsed} by
 * {@link BalanceTab}); charts are inline SVG with no script or external asset, so a page
 * works offline and in the History Server. Every value cell carries {@code data-field} and
 * the exact value in {@code data-value}, so a test can compare the page with the records.
 */
public final class BalanceHtml {
  private BalanceHtml() {}

  static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss").withZone(ZoneOffset.UTC);
  static final String DASH = "-";
  static final String TABLE = "table table-bordered table-sm table-striped sortable";
  static final String BEFORE_COLOR = "#b0b0b0", AFTER_COLOR = "#1f77b4", LB_COLOR = "#d62728";

  /** Escape text for an HTML element or a double-quoted attribute. */
  public static String esc(String s) {
    if (s == null) return "";
    StringBuilder b = new StringBuilder(s.length() + 8);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '<': b.append("&lt;"); break;
        case '>': b.append("&gt;"); break;
        case '&': b.append("&amp;"); break;
        case '"': b.append("&quot;"); break;
        case '\'': b.append("&#39;"); break;
        default: b.append(c);
      }
    }
    return b.toString();
  }

  /** A number for reading: integral values whole, others to 4 significant digits. */
  public static String fmt(Double v) {
    if (v == null) return DASH;
    if (v.isNaN() || v.isInfinite()) return String.valueOf(v);
    if (v == Math.rint(v) && Math.abs(v) < 1e15) return String.valueOf(v.longValue());
    return new BigDecimal(v).round(new MathContext(4)).stripTrailingZeros().toPlainString();
  }

  public static String fmt(Long v) {
    return v == null ? DASH : String.valueOf(v);
  }

  /** Bytes with a binary unit ("834 B", "1.5 KiB"). */
  public static String bytes(Long v) {
    if (v == null) return DASH;
    String[] units = {"B", "KiB", "MiB", "GiB", "TiB"};
    double x = v;
    int u = 0;
    while (Math.abs(x) >= 1024 && u < units.length - 1) { x /= 1024; u++; }
    return u == 0 ? v + " B" : fmt(Math.round(x * 10) / 10.0) + " " + units[u];
  }

  public static String time(Double epochSeconds) {
    if (epochSeconds == null) return DASH;
    return TIME.format(Instant.ofEpochMilli(Math.round(epochSeconds * 1000)));
  }

  static String raw(Object v) {
    return v == null ? "" : esc(String.valueOf(v));
  }

  static String cell(String field, Object value, String shown) {
    return "<td data-field=\"" + field + "\" data-value=\"" + raw(value) + "\">" + shown + "</td>";
  }

  static String pair(Double max, Double avg) {
    return max == null && avg == null ? DASH : fmt(max) + " / " + fmt(avg);
  }

  static String strategy(BalanceRecord r) {
    String s = r.strategy(), p = r.planner();
    if (s == null) return p == null ? DASH : esc(p);
    return p == null || p.equals(s) ? esc(s) : esc(s) + " / " + esc(p);
  }

  static String ratio(Double max, Double lb) {
    return max == null || lb == null || lb == 0.0 ? null : fmt(max / lb);
  }

  static String jobs(BalanceRecord r, Function<String, String> link) {
    StringBuilder b = new StringBuilder();
    for (long j : r.jobIds()) {
      if (b.length() > 0) b.append(", ");
      b.append("<a href=\"").append(esc(link.apply("/jobs/job/?id=" + j))).append("\">")
          .append(j).append("</a>");
    }
    return b.length() == 0 ? DASH : b.toString();
  }

  static String layout(BalanceRecord r) {
    String l = r.layout();
    Long t = r.tableSize();
    if (l != null && t != null) return esc(l) + " (" + t + " entries)";
    if (l != null) return esc(l);
    return t == null ? DASH : t + " entries";
  }

  static final String[] HEADERS = {
      "Time (UTC)", "Operation", "Key", "Hot keys (share, before \u2192 after)", "Strategy / planner", "Partitions", "Max / avg before",
      "Max / avg after", "Lower bound", "Max / LB", "Table / layout", "Keys moved",
      "Bytes moved", "Plan s", "Migration s", "Jobs"};

  /**
   * One table row per record; {@code link} maps a UI path to a full URL. "Max / LB" compares
   * the max load after the plan (as run when there was no plan) with the lower bound.
   */
  public static String row(BalanceRecord r, Function<String, String> link) {
    String op = r.operation() == null ? r.kind() : r.operation();
    String detail = link.apply("/balance/operation/?id=" + r.id());
    Double maxA = r.max("after") != null ? r.max("after") : r.max("before");
    return "<tr data-id=\"" + r.id() + "\">"
        + cell("time", r.time(), time(r.time()))
        + cell("operation", op, "<a href=\"" + esc(detail) + "\">" + esc(op) + "</a> <small>"
            + esc(r.kind()) + (r.operator() != null ? " " + esc(r.operator()) : "")
            + (r.batch() != null ? " batch " + r.batch() : "") + "</small>")
        + cell("key", r.key(), r.key() == null ? DASH : esc(r.key()))
        + cell("hot_keys", r.node().get("hot_keys"), BalanceKeys.cell(r))
        + cell("strategy", r.strategy(), strategy(r))
        + cell("num_partitions", r.numPartitions(), fmt(r.numPartitions()))
        + cell("max_avg_before", r.max("before") + "/" + r.avg("before"),
            pair(r.max("before"), r.avg("before")))
        + cell("max_avg_after", r.max("after") + "/" + r.avg("after"),
            r.max("after") == null && r.loadsNote() != null
                ? "<span title=\"" + esc(r.loadsNote()) + "\">not known when planned</span>"
                : pair(r.max("after"), r.avg("after"))
                    + (r.has("loads_after_estimated") ? " <small>(estimated)</small>" : ""))
        + cell("lower_bound", r.lowerBound(), fmt(r.lowerBound()))
        + cell("max_over_lb", ratio(maxA, r.lowerBound()),
            ratio(maxA, r.lowerBound()) == null ? DASH : ratio(maxA, r.lowerBound()))
        + cell("table_size", r.tableSize(), layout(r))
        + cell("keys_moved", r.keysMoved(), fmt(r.keysMoved()))
        + cell("bytes_moved", r.bytesMoved(), bytes(r.bytesMoved()))
        + cell("plan_seconds", r.planSeconds(), fmt(r.planSeconds()))
        + cell("migration_seconds", r.migrationSeconds(), fmt(r.migrationSeconds()))
        + cell("job_ids", r.jobIds(), jobs(r, link))
        + "</tr>";
  }

  /** The list page body: newest record first. */
  public static String listPage(List<BalanceRecord> newestFirst, long total, int maxRecords,
                                Function<String, String> link) {
    StringBuilder b = new StringBuilder();
    b.append("<div id=\"sparkbalance-list\"><p>One row per balanced operation (RDD, DataFrame, "
        + "keyed-state batch) recorded by sparkbalance. Loads are in the planner's cost unit; the "
        + "lower bound is the best max load any plan can reach. Showing ")
        .append(newestFirst.size()).append(" of ").append(total)
        .append(" records kept (at most ").append(maxRecords)
        .append("). JSON: <a href=\"").append(esc(link.apply("/balance/json"))).append("\">")
        .append("balance/json</a>.</p>");
    if (newestFirst.isEmpty()) {
      return b.append("<p id=\"sparkbalance-empty\">No balance records yet.</p></div>").toString();
    }
    operators(b, newestFirst, link);
    b.append("<h4>Operations</h4>");
    b.append("<table class=\"").append(TABLE).append("\" id=\"sparkbalance-records\"><thead><tr>");
    for (String h : HEADERS) b.append("<th>").append(esc(h)).append("</th>");
    b.append("</tr></thead><tbody>");
    for (BalanceRecord r : newestFirst) b.append(row(r, link));
    return b.append("</tbody></table></div>").toString();
  }

  /** One row per keyed-state operator: batches, migrations, state moved, the latest batch. */
  static void operators(StringBuilder b, List<BalanceRecord> newestFirst,
                        Function<String, String> link) {
    Map<String, long[]> agg = new LinkedHashMap<>();  // batches, migrations, keys, bytes
    Map<String, BalanceRecord> latest = new LinkedHashMap<>();
    for (BalanceRecord r : newestFirst) {
      String op = r.operator();
      if (op == null) continue;
      latest.putIfAbsent(op, r);
      long[] a = agg.computeIfAbsent(op, k -> new long[4]);
      a[0]++;
      if (r.isMigration()) a[1]++;
      a[2] += r.keysMoved() == null ? 0 : r.keysMoved();
      a[3] += r.bytesMoved() == null ? 0 : r.bytesMoved();
    }
    if (agg.isEmpty()) return;
    b.append("<h4>Keyed-state operators</h4><table class=\"").append(TABLE)
        .append("\" id=\"sparkbalance-operators\"><thead><tr><th>Operator</th><th>Batches shown"
            + "</th><th>Migrations</th><th>Keys moved</th><th>Bytes moved</th>"
            + "<th>Latest max / avg: as run &rarr; after</th></tr></thead><tbody>");
    for (Map.Entry<String, long[]> e : agg.entrySet()) {
      BalanceRecord last = latest.get(e.getKey());
      long[] a = e.getValue();
      b.append("<tr data-operator=\"").append(esc(e.getKey())).append("\">")
          .append(cell("operator", e.getKey(), "<a href=\"" + esc(link.apply(
              "/balance/operation/?id=" + last.id())) + "\">" + esc(e.getKey()) + "</a>"))
          .append(cell("batches", a[0], String.valueOf(a[0])))
          .append(cell("migrations", a[1], String.valueOf(a[1])))
          .append(cell("keys_moved", a[2], String.valueOf(a[2])))
          .append(cell("bytes_moved", a[3], bytes(a[3])))
          .append(cell("imbalance_before", last.imbalance("before"),
              fmt(last.imbalance("before")) + " &rarr; " + fmt(last.imbalance("after"))))
          .append("</tr>");
    }
    b.append("</tbody></table>");
  }

  /** The detail page body of {@code r}; {@code timeline} holds its operator's records in order. */
  public static String detailPage(BalanceRecord r, List<BalanceRecord> timeline,
                                  Function<String, String> link) {
    StringBuilder b = new StringBuilder("<div id=\"sparkbalance-detail\" data-id=\"")
        .append(r.id()).append("\">");
    b.append("<p><a href=\"").append(esc(link.apply("/balance/"))).append("\">All operations</a>"
        + " &middot; <a href=\"").append(esc(link.apply("/balance/operation/json?id=" + r.id())))
        .append("\">JSON</a></p>");
    if (r.description() != null) b.append("<p>").append(esc(r.description())).append("</p>");
    b.append("<table class=\"").append(TABLE).append("\" id=\"sparkbalance-summary\"><thead><tr>");
    for (String h : HEADERS) b.append("<th>").append(esc(h)).append("</th>");
    b.append("</tr></thead><tbody>").append(row(r, link)).append("</tbody></table>");
    List<Double> before = r.loads("before"), after = r.loads("after");
    if (r.loadsNote() != null) {
      b.append("<p id=\"sparkbalance-loads-note\">").append(esc(r.loadsNote())).append("</p>");
    }
    if (!before.isEmpty() || !after.isEmpty()) {
      b.append("<h4>Load per partition</h4>");
      if (r.beforePlacement() != null) {
        b.append("<p id=\"sparkbalance-before-placement\"><b>Before</b>: ")
            .append(esc(r.beforePlacement())).append(". <b>After</b>: where sparkbalance put the "
            + "rows").append(r.has("loads_after_estimated") ? " (estimated: the key statistics "
            + "replayed through the splitting function as one map task)" : "")
            .append(".</p>");
      }
      if (Math.max(before.size(), after.size()) > BalanceSvg.FIT_PARTITIONS) {
        b.append("<p>Peaks: the max load of every ")
            .append((int) Math.ceil(Math.max(before.size(), after.size())
                / (double) BalanceSvg.FIT_PARTITIONS))
            .append(" consecutive partitions; every partition below (scroll sideways).</p>")
            .append(BalanceSvg.groupedBars(before, after, r.lowerBound(), BalanceKeys.hottest(r),
                BalanceKeys.names(r)));
      }
      b.append(BalanceSvg.loadBars(before, after, r.avg("after") != null ? r.avg("after")
              : r.avg("before"), r.lowerBound(), BalanceKeys.hottest(r), BalanceKeys.names(r)));
    }
    b.append(BalanceKeys.table(r, "hot_keys", "sparkbalance-hot-keys", "Hot keys"));
    b.append(BalanceKeys.table(r, "split_keys", "sparkbalance-split-keys",
        "Split keys (records spread over several partitions)"));
    if (timeline.size() > 0 && r.operator() != null) {
      b.append("<h4>Operator ").append(esc(r.operator())).append(": max / avg load per batch, "
          + "as run and after its plan</h4>")
          .append(BalanceSvg.timeline(timeline, r.id()));
      b.append("<table class=\"").append(TABLE).append("\" id=\"sparkbalance-timeline\"><thead><tr>"
          + "<th>Batch</th><th>Max load</th><th>Avg load</th><th>Max / avg as run</th>"
          + "<th>Max / avg after</th><th>Keys moved (decided here)</th><th>Bytes moved</th>"
          + "</tr></thead><tbody>");
      Map<Long, BalanceRecord> movedBy = BalanceSvg.movesByDecidingBatch(timeline);
      for (BalanceRecord t : timeline) {
        BalanceRecord mv = t.batch() == null ? null : movedBy.get(t.batch());
        String batch = t.batch() == null ? "#" + t.id() : String.valueOf(t.batch());
        b.append("<tr data-id=\"").append(t.id()).append("\"")
            .append(mv != null ? " class=\"migration\"" : "").append(">")
            .append(cell("batch", t.batch(), "<a href=\"" + esc(link.apply(
                "/balance/operation/?id=" + t.id())) + "\">" + esc(batch) + "</a>"))
            .append(cell("max_before", t.max("before"), fmt(t.max("before"))))
            .append(cell("avg_before", t.avg("before"), fmt(t.avg("before"))))
            .append(cell("imbalance_before", t.imbalance("before"), fmt(t.imbalance("before"))))
            .append(cell("imbalance_after", t.imbalance("after"), fmt(t.imbalance("after"))))
            .append(cell("keys_moved", mv == null ? null : mv.keysMoved(),
                mv == null ? DASH : fmt(mv.keysMoved()) + " <small>(moved with batch "
                    + fmt(mv.batch()) + ")</small>"))
            .append(cell("bytes_moved", mv == null ? null : mv.bytesMoved(),
                mv == null ? DASH : bytes(mv.bytesMoved())))
            .append("</tr>");
      }
      b.append("</tbody></table>");
    }
    b.append("<details><summary>Record</summary><pre id=\"sparkbalance-json\">")
        .append(esc(r.toJson())).append("</pre></details></div>");
    return b.toString();
  }
}
