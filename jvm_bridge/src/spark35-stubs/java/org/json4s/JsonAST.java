package org.json4s;

/** Compile-only stub: json4s 3.7 nests {@code JValue} in {@code JsonAST}. */
public final class JsonAST {
  private JsonAST() {}

  public abstract static class JValue {}
}
