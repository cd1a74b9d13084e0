package io.sparkbalance.bridge;

import javax.servlet.http.HttpServletRequest;
import org.json4s.JsonAST.JValue;
import scala.Option;
import scala.collection.Seq;
import scala.xml.Node;
import scala.xml.Unparsed;

import org.apache.spark.ui.UIUtils;
import org.apache.spark.ui.WebUIPage;

/**
 * The {@link BalanceTab}'s pages on Spark 3.5 ({@code javax.servlet}, Scala 2.12
 * {@code collection.Seq}, json4s 3.7 {@code JsonAST.JValue}): {@link BalancePages} line for
 * line, with the 3.5 types. Compiled by {@code jvm_bridge/build.sh} against the 3.5 signatures
 * declared in {@code jvm_bridge/src/spark35-stubs/} (compile-only, not in the jar), so the one
 * jar built against PySpark 4.x serves both lines; {@link BalanceTab} picks the set whose
 * {@code WebUIPage.render} matches the running Spark.
 */
final class BalancePages35 {
  private BalancePages35() {}

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
        UIUtils.headerSparkPage$default$6(), UIUtils.headerSparkPage$default$7());
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
