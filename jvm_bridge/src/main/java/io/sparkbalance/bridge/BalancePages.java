package io.sparkbalance.bridge;

import jakarta.servlet.http.HttpServletRequest;
import org.json4s.JValue;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.xml.Node;
import scala.xml.Unparsed;

import org.apache.spark.ui.UIUtils;
import org.apache.spark.ui.WebUIPage;

/**
 * The {@link BalanceTab}'s pages on Spark 4.x (jakarta servlets, Scala 2.13): {@code /balance/}
 * and {@code /balance/operation/?id=N}, with their JSON twins. What they show is the tab's
 * (servlet-free); only the request and page types are version-specific. The Spark 3.5 twin is
 * {@code BalancePages35} ({@code jvm_bridge/src/spark35/}), kept line for line alike.
 */
final class BalancePages {
  private BalancePages() {}

  static void attach(BalanceTab tab) {
    tab.attachPage(new ListPage(tab));
    tab.attachPage(new DetailPage(tab));
  }

  static java.util.function.Function<String, String> linker(BalanceTab tab, HttpServletRequest req) {
    String base = tab.basePath();
    return path -> UIUtils.prependBaseUri(req, base, path);
  }

  static Seq<Node> page(BalanceTab tab, HttpServletRequest req, String title, String html) {
    return UIUtils.headerSparkPage(req, title, () -> new Unparsed(html), tab, Option.empty(),
        UIUtils.headerSparkPage$default$6(), UIUtils.headerSparkPage$default$7(),
        UIUtils.headerSparkPage$default$8());
  }

  static JValue json(com.fasterxml.jackson.databind.JsonNode node) {
    return org.json4s.jackson.JsonMethods$.MODULE$.fromJsonNode(node);
  }

  static final class ListPage extends WebUIPage {
    private final BalanceTab tab;

    ListPage(BalanceTab tab) {
      super("");
      this.tab = tab;
    }

    @Override
    public Seq<Node> render(HttpServletRequest req) {
      // ?view=stages: the stage skew section alone (a page a link or a screenshot can open
      // at its top; a fragment link into the long list page scrolls past what it names)
      if ("stages".equals(req.getParameter("view"))) {
        return page(tab, req, "Balance: stage skew", tab.stagesOnlyHtml(linker(tab, req)));
      }
      return page(tab, req, "Balance", tab.listHtml(linker(tab, req)));
    }

    @Override
    public JValue renderJson(HttpServletRequest req) {
      return json(tab.listJson());
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
      String[] titleHtml = tab.detail(req.getParameter("id"), linker(tab, req));
      return page(tab, req, titleHtml[0], titleHtml[1]);
    }

    @Override
    public JValue renderJson(HttpServletRequest req) {
      return json(tab.detailJson(req.getParameter("id")));
    }
  }
}
