package io.sparkbalance.bridge;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The hot keys of a record as the tab shows them: the heaviest keys, their share of the
 * records, and the partition plain Spark would have put each on ("before") and the one (or,
 * for a splitting strategy, the ones) sparkbalance put it on ("after"). Written by
 * {@code sparkbalance/spark/report/hot_keys.py}.
 */
final class BalanceKeys {
  private BalanceKeys() {}

  /** Hot keys named in a list row. */
  static final int IN_ROW = 3;

  /** A key as text: a string as is, anything else as its JSON. */
  static String key(JsonNode h) {
    JsonNode k = h.get("key");
    if (k == null || k.isNull()) return "null";
    return k.isTextual() ? k.textValue() : k.toString();
  }

  static String share(JsonNode h) {
    JsonNode s = h.get("share");
    return s == null || !s.isNumber() ? "" : BalanceHtml.fmt(Math.round(s.doubleValue() * 1000)
        / 10.0) + "%";
  }

  /** "p5", or "p0 27% + p1 26%" for a key split over several partitions; "?" when unknown. */
  static String where(JsonNode v) {
    if (v == null || v.isNull()) return "?";
    if (v.isNumber()) return "p" + v.longValue();
    if (!v.isObject()) return BalanceHtml.esc(v.toString());
    List<String> parts = new ArrayList<>();
    Iterator<Map.Entry<String, JsonNode>> it = v.fields();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> e = it.next();
      parts.add("p" + BalanceHtml.esc(e.getKey()) + " "
          + BalanceHtml.fmt(Math.round(e.getValue().doubleValue() * 1000) / 10.0) + "%");
    }
    return String.join(" + ", parts);
  }

  /** The list row's cell: the first {@link #IN_ROW} hot keys, "key share before → after". */
  static String cell(BalanceRecord r) {
    List<JsonNode> hot = r.hotKeys("hot_keys");
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < Math.min(IN_ROW, hot.size()); i++) {
      JsonNode h = hot.get(i);
      if (b.length() > 0) b.append("<br/>");
      b.append("<span class=\"hot-key\" style=\"white-space:nowrap\" data-key=\"").append(BalanceHtml.esc(key(h)))
          .append("\"><code>").append(BalanceHtml.esc(key(h))).append("</code> ")
          .append(share(h)).append(" <small>").append(where(h.get("before"))).append(" &rarr; ")
          .append(where(h.get("after"))).append("</small></span>");
    }
    return b.length() == 0 ? BalanceHtml.DASH : b.toString();
  }

  /** The detail page's table of hot keys (or of split keys: {@code field = "split_keys"}). */
  /** Names of "before" and "after": plain Spark vs sparkbalance for a plan; for a keyed-state
   * batch, the layout it ran with vs the layout its plan made for the next batch. */
  static String[] names(BalanceRecord r) {
    return "state".equals(r.kind())
        ? new String[] {"as run (layout in use)", "after its plan (next layout)"}
        : new String[] {"before (plain Spark)", "after (sparkbalance)"};
  }

  static String table(BalanceRecord r, String field, String id, String title) {
    List<JsonNode> hot = r.hotKeys(field);
    if (hot.isEmpty()) return "";
    StringBuilder b = new StringBuilder("<h4>").append(BalanceHtml.esc(title)).append("</h4>");
    b.append("<table class=\"").append(BalanceHtml.TABLE).append("\" id=\"").append(id)
        .append("\"><thead><tr><th>Key</th><th>Share of records</th><th>Load</th>"
            + "<th>" + names(r)[0] + "</th><th>" + names(r)[1] + "</th></tr></thead><tbody>");
    for (JsonNode h : hot) {
      JsonNode load = h.get("load");
      b.append("<tr data-key=\"").append(BalanceHtml.esc(key(h))).append("\">")
          .append(BalanceHtml.cell("key", key(h), "<code>" + BalanceHtml.esc(key(h)) + "</code>"))
          .append(BalanceHtml.cell("share", h.get("share"), share(h)))
          .append(BalanceHtml.cell("load", load, load == null || !load.isNumber()
              ? BalanceHtml.DASH : BalanceHtml.fmt(load.doubleValue())))
          .append(BalanceHtml.cell("before", h.get("before"), where(h.get("before"))))
          .append(BalanceHtml.cell("after", h.get("after"), where(h.get("after"))))
          .append("</tr>");
    }
    return b.append("</tbody></table>").toString();
  }

  /** The hottest key, for the load chart's labels (null when the record names none). */
  static JsonNode hottest(BalanceRecord r) {
    List<JsonNode> hot = r.hotKeys("hot_keys");
    return hot.isEmpty() ? null : hot.get(0);
  }
}
