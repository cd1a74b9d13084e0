package javax.servlet.http;

/** Compile-only stub: the one method the Spark 3.5 pages call. */
public interface HttpServletRequest {
  String getParameter(String name);
}
