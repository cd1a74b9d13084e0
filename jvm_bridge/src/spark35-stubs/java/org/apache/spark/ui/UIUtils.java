package org.apache.spark.ui;

/** Compile-only stub of Spark 3.5's {@code UIUtils} members the pages call. */
public final class UIUtils {
  private UIUtils() {}

  public static String prependBaseUri(javax.servlet.http.HttpServletRequest request,
      String basePath, String resource) {
    return null;
  }

  public static scala.collection.Seq<scala.xml.Node> headerSparkPage(
      javax.servlet.http.HttpServletRequest request, String title,
      scala.Function0<scala.collection.Seq<scala.xml.Node>> content, SparkUITab activeTab,
      scala.Option<String> helpText, boolean showVisualization, boolean useDataTables) {
    return null;
  }

  public static boolean headerSparkPage$default$6() {
    return false;
  }

  public static boolean headerSparkPage$default$7() {
    return false;
  }
}
