package io.sparkbalance.bridge;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.function.Function;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;

import org.apache.spark.ui.SparkUI;
import org.apache.spark.ui.SparkUITab;
import org.apache.spark.ui.WebUIPage;
import org.apache.spark.util.kvstore.KVStore;
import org.apache.spark.util.kvstore.KVStoreView;

/**
 * The "Balance" tab: {@code /balance/} lists the records (newest first),
 * {@code /balance/operation/?id=N} shows one with its load bars and, for a keyed-state operator,
 * its per-batch timeline; {@code /balance/json} and {@code /balance/operation/json?id=N} serve
 * the same records as JSON. Reads {@link BalanceRow}s from the application status store, so the
 * live UI and the History Server render the same pages.
 *
 * <p>This class is servlet-free and shared by Spark 3.5 and 4.x; the pages, whose signatures
 * differ (4.x: jakarta servlets, Scala 2.13 {@code immutable.Seq}; 3.5: {@code javax.servlet},
 * Scala 2.12 {@code collection.Seq}), are {@link BalancePages} and {@code BalancePages35}
 * (compiled against the Spark 3.5 signatures, {@code jvm_bridge/src/spark35/}).
 */
public final class BalanceTab extends SparkUITab {
  /** Rows shown on the list page (the JSON endpoint serves every stored row). */
  static final int LIST_LIMIT = 1000;

  private final KVStore store;
  final int maxRecords;
  /** Stage skew thresholds ({@link BalanceStages#RATIO_CONF}, {@link BalanceStages#MIN_MILLIS_CONF}). */
  final double skewRatio;
  final long skewMinMillis;

  /**
   * The tab with its pages; throws {@code IllegalStateException} (naming the servlet API met)
   * when the jar has no pages for the running Spark: callers log it and go on without the tab.
   */
  public BalanceTab(SparkUI parent, KVStore store, int maxRecords) {
    super(parent, "balance");
    this.store = store;
    this.maxRecords = maxRecords;
    this.skewRatio = parent.conf().getDouble(BalanceStages.RATIO_CONF, BalanceStages.DEFAULT_RATIO);
    this.skewMinMillis = parent.conf().getLong(BalanceStages.MIN_MILLIS_CONF,
        BalanceStages.DEFAULT_MIN_MILLIS);
    attachPages();
  }

  private KVStoreView<BalanceRow> view() {
    try {
      return store.view(BalanceRow.class);
    } catch (Exception e) {
      throw new IllegalStateException("could not read the balance records", e);
    }
  }

  /** Stored records in id order; newest first and at most {@code limit} when limit &gt; 0. */
  List<BalanceRecord> records(int limit) {
    List<BalanceRecord> out = new ArrayList<>();
    for (BalanceRow row : limit > 0 ? view().reverse().max(limit) : view()) {
      out.add(row.record());
    }
    return out;
  }

  long count() {
    try {
      return store.count(BalanceRow.class);
    } catch (Exception e) {
      throw new IllegalStateException("could not count the balance records", e);
    }
  }

  BalanceRecord record(long id) {
    try {
      return store.read(BalanceRow.class, id).record();
    } catch (NoSuchElementException e) {
      return null;
    } catch (Exception e) {
      throw new IllegalStateException("could not read balance record " + id, e);
    }
  }

  /** Records of one keyed-state operator, in posting order. */
  List<BalanceRecord> operatorRecords(String operator) {
    if (operator == null) return Collections.emptyList();
    List<BalanceRecord> out = new ArrayList<>();
    for (BalanceRow row : view()) {
      if (operator.equals(row.operator)) out.add(row.record());
    }
    return out;
  }

  /** The list page's HTML, links made by {@code linker} (the running Spark's base URI). */
  String listHtml(Function<String, String> linker) {
    List<BalanceRecord> recs = records(LIST_LIMIT);
    return BalanceHtml.listPage(recs, count(), maxRecords, linker) + stagesHtml(recs, linker);
  }

  /** The stage skew section alone ({@code /balance/?view=stages}). */
  String stagesOnlyHtml(Function<String, String> linker) {
    return "<p><a href=\"" + BalanceHtml.esc(linker.apply("/balance/")) + "\">All balance records</a></p>"
        + stagesHtml(records(LIST_LIMIT), linker);
  }

  /** The stage skew section (every stage of the application); a failure is shown, not thrown. */
  String stagesHtml(List<BalanceRecord> recs, Function<String, String> linker) {
    try {
      return "<div id=\"sparkbalance-stage-view\">" + BalanceStages.html(
          BalanceStages.read(store), recs, skewRatio, skewMinMillis, linker) + "</div>";
    } catch (RuntimeException | LinkageError e) {
      return "<p id=\"sparkbalance-stage-view\">Stage skew unavailable: "
          + BalanceHtml.esc(String.valueOf(e)) + "</p>";
    }
  }

  /** The JSON list: every stored record. */
  JsonNode listJson() {
    ArrayNode arr = BalanceRecord.MAPPER.createArrayNode();
    for (BalanceRecord r : records(0)) arr.add(r.node());
    return arr;
  }

  /** {title, html} of the detail page of record {@code ?id=idText}. */
  String[] detail(String idText, Function<String, String> linker) {
    Long id = idParam(idText);
    BalanceRecord r = id == null ? null : record(id);
    if (r == null) {
      return new String[] {"Balance", "<div id=\"sparkbalance-missing\">No balance record with id="
          + BalanceHtml.esc(idText) + " (it may have been dropped: the tab keeps "
          + "the last " + maxRecords + ").</div>"};
    }
    String what = r.operator() != null ? r.operator() : r.operation() != null ? r.operation()
        : r.kind();
    String title = "Balance: " + what + (r.batch() != null ? ", batch " + r.batch() : "")
        + " (#" + r.id() + ")";
    return new String[] {title, BalanceHtml.detailPage(r, operatorRecords(r.operator()), linker)};
  }

  /** The JSON of record {@code ?id=idText}, JSON null when there is none. */
  JsonNode detailJson(String idText) {
    Long id = idParam(idText);
    BalanceRecord r = id == null ? null : record(id);
    return r == null ? BalanceRecord.MAPPER.nullNode() : r.node();
  }

  /**
   * Serve {@code /balance/json} (and every other {@code /balance...} path) without Jetty's
   * 301 to the same path with a trailing slash: each page's handler is a servlet context
   * whose root is its path, and Jetty redirects a request for a context's bare root unless
   * the context allows a null path. Reflective: Spark 4.x runs Jetty 12
   * ({@code setAllowNullPathInContext}), Spark 3.5 Jetty 9 ({@code setAllowNullPathInfo}),
   * and {@code WebUI.getHandlers} returns a Scala 2.13 or 2.12 Seq. Call after
   * {@code attachTab}; failures leave the redirect (the page still answers after it).
   */
  static void serveWithoutRedirect(SparkUI ui) {
    try {
      Object seq = org.apache.spark.ui.WebUI.class.getMethod("getHandlers").invoke(ui);
      scala.collection.Iterator<?> it =
          (scala.collection.Iterator<?>) seq.getClass().getMethod("iterator").invoke(seq);
      while (it.hasNext()) {
        Object h = it.next();
        Object path = h.getClass().getMethod("getContextPath").invoke(h);
        if (path == null || !String.valueOf(path).startsWith("/balance")) continue;
        for (String name : new String[] {"setAllowNullPathInContext", "setAllowNullPathInfo"}) {
          try {
            h.getClass().getMethod(name, boolean.class).invoke(h, true);
            break;
          } catch (NoSuchMethodException e) {
            // the other Jetty line's name
          }
        }
      }
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      org.slf4j.LoggerFactory.getLogger(BalanceTab.class).debug(
          "sparkbalance: /balance/json keeps Jetty's redirect: " + e);
    }
  }

  static Long idParam(String s) {
    try {
      return s == null ? null : Long.parseLong(s.trim());
    } catch (NumberFormatException e) {
      return null;
    }
  }

  /**
   * The pages for the running Spark's servlet API: Spark 4.x declares
   * {@code WebUIPage.render(jakarta.servlet.http.HttpServletRequest)}, Spark 3.5
   * {@code render(javax.servlet.http.HttpServletRequest)} returning a Scala 2.12 Seq. The
   * class set that does not match is never loaded (its servlet types do not exist there).
   */
  private void attachPages() {
    String servlet = null;
    for (java.lang.reflect.Method m : WebUIPage.class.getMethods()) {
      if (m.getName().equals("render") && m.getParameterCount() == 1) {
        servlet = m.getParameterTypes()[0].getName();
      }
    }
    if ("jakarta.servlet.http.HttpServletRequest".equals(servlet)) {
      BalancePages.attach(this);
      return;
    }
    try {
      java.lang.reflect.Method attach = Class.forName("io.sparkbalance.bridge.BalancePages35")
          .getDeclaredMethod("attach", BalanceTab.class);
      attach.setAccessible(true);
      attach.invoke(null, this);
    } catch (ReflectiveOperationException | LinkageError e) {
      throw new IllegalStateException("sparkbalance: the Balance tab has no pages for this "
          + "Spark's servlet API (" + servlet + "); it needs Spark 3.5 or 4.x and a bridge jar "
          + "built with the Spark 3.5 pages (jvm_bridge/build.sh)", e);
    }
  }
}
