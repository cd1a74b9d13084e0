package org.apache.spark.ui;

/** Compile-only stub of Spark 3.5's {@code WebUIPage} (javax servlets, Scala 2.12 Seq). */
public abstract class WebUIPage {
  public WebUIPage(String prefix) {}

  public abstract scala.collection.Seq<scala.xml.Node> render(
      javax.servlet.http.HttpServletRequest request);

  public org.json4s.JsonAST.JValue renderJson(javax.servlet.http.HttpServletRequest request) {
    return null;
  }
}
