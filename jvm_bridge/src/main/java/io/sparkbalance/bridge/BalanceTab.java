package io.sparkbalance.bridge;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.function.Function;

import com.fasterxml.jackson.databind.node.ArrayNode;
import jakarta.servlet.http.HttpServletRequest;
import org.json4s.JValue;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.xml.Node;
import scala.xml.Unparsed;

import org.apache.spark.ui.SparkUI;
import org.apache.spark.ui.SparkUITab;
import org.apache.spark.ui.UIUtils;
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
 * <p>Spark 4.x API: jakarta servlets, Scala 2.13 {@code immutable.Seq}; on Spark 3.5 the page
 * signatures take {@code javax.servlet} requests and return Scala 2.12 {@code collection.Seq}.
 */
public final class BalanceTab extends SparkUITab {
  /** Rows shown on the list page (the JSON endpoint serves every stored row). */
  static final int LIST_LIMIT = 1000;

  private final KVStore store;
  private final int maxRecords;

  public BalanceTab(SparkUI parent, KVStore store, int maxRecords) {
    super(parent, "balance");
    this.store = store;
    this.maxRecords = maxRecords;
    attachPage(new ListPage(this));
    attachPage(new DetailPage(this));
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

  Function<String, String> linker(HttpServletRequest req) {
    String base = basePath();
    return path -> UIUtils.prependBaseUri(req, base, path);
  }

  Seq<Node> page(HttpServletRequest req, String title, String html) {
    return UIUtils.headerSparkPage(req, title, () -> new Unparsed(html), this, Option.empty(),
        UIUtils.headerSparkPage$default$6(), UIUtils.headerSparkPage$default$7(),
        UIUtils.headerSparkPage$default$8());
  }

  static JValue json(com.fasterxml.jackson.databind.JsonNode node) {
    return org.json4s.jackson.JsonMethods$.MODULE$.fromJsonNode(node);
  }

  static Long idParam(HttpServletRequest req) {
    String s = req.getParameter("id");
    try {
      return s == null ? null : Long.parseLong(s.trim());
    } catch (NumberFormatException e) {
      return null;
    }
  }

  static final class ListPage extends WebUIPage {
    private final BalanceTab tab;

    ListPage(BalanceTab tab) {
      super("");
      this.tab = tab;
    }

    @Override
    public Seq<Node> render(HttpServletRequest req) {
      String html = BalanceHtml.listPage(tab.records(LIST_LIMIT), tab.count(), tab.maxRecords,
          tab.linker(req));
      return tab.page(req, "Balance", html);
    }

    @Override
    public JValue renderJson(HttpServletRequest req) {
      ArrayNode arr = BalanceRecord.MAPPER.createArrayNode();
      for (BalanceRecord r : tab.records(0)) arr.add(r.node());
      return json(arr);
    }
  }

  static final class DetailPage extends WebUIPage {
    private final BalanceTab tab;

    DetailPage(BalanceTab tab) {
      super("operation");
      this.tab = tab;
    }

    @Override
    public Seq<Node> render(HttpServletRequest req) {
      Long id = idParam(req);
      BalanceRecord r = id == null ? null : tab.record(id);
      if (r == null) {
        return tab.page(req, "Balance", "<div id=\"sparkbalance-missing\">No balance record with id="
            + BalanceHtml.esc(req.getParameter("id")) + " (it may have been dropped: the tab keeps "
            + "the last " + tab.maxRecords + ").</div>");
      }
      String what = r.operator() != null ? r.operator() : r.operation() != null ? r.operation()
          : r.kind();
      String title = "Balance: " + what + (r.batch() != null ? ", batch " + r.batch() : "")
          + " (#" + r.id() + ")";
      return tab.page(req, title,
          BalanceHtml.detailPage(r, tab.operatorRecords(r.operator()), tab.linker(req)));
    }

    @Override
    public JValue renderJson(HttpServletRequest req) {
      Long id = idParam(req);
      BalanceRecord r = id == null ? null : tab.record(id);
      return json(r == null ? BalanceRecord.MAPPER.nullNode() : r.node());
    }
  }
}
