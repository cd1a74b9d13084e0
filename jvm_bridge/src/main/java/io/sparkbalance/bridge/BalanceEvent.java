package io.sparkbalance.bridge;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;

import org.apache.spark.scheduler.SparkListenerEvent;

/**
 * One balance record on the listener bus. Spark's event log writes events it does not know
 * with Jackson (the {@code "Event"} property names this class) and the History Server reads
 * them back the same way, so the record travels as a JSON tree, not as an escaped string.
 */
public final class BalanceEvent implements SparkListenerEvent {
  private final JsonNode record;

  @JsonCreator
  public BalanceEvent(@JsonProperty("record") JsonNode record) {
    this.record = record;
  }

  @JsonProperty("record")
  public JsonNode record() {
    return record;
  }
}
