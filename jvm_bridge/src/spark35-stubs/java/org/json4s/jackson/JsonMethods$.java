package org.json4s.jackson;

/** Compile-only stub: json4s 3.7's {@code JsonMethods} object (returns {@code JsonAST.JValue}). */
public final class JsonMethods$ {
  public static final JsonMethods$ MODULE$ = null;

  public org.json4s.JsonAST.JValue fromJsonNode(com.fasterxml.jackson.databind.JsonNode node) {
    return null;
  }
}
