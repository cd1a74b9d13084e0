package io.sparkbalance.bridge;

import java.util.List;

/**
 * Inline SVG charts of the "Balance" tab: per-partition load bars and a keyed-state operator's
 * per-batch timeline. Plain SVG elements (no script, no external asset); each bar group and
 * point carries its exact values in {@code data-*} attributes and a {@code <title>} tooltip.
 */
final class BalanceSvg {
  private BalanceSvg() {}

  static final int W = 960, H = 280, LEFT = 64, RIGHT = 16, TOP = 28, BOTTOM = 36;

  private static String n(double v) {
    return String.format(java.util.Locale.ROOT, "%.2f", v);
  }

  private static double niceMax(double v) {
    if (!(v > 0)) return 1.0;
    double p = Math.pow(10, Math.floor(Math.log10(v)));
    for (double m : new double[] {1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10}) {
      if (m * p >= v) return m * p;
    }
    return 10 * p;
  }

  private static void yAxis(StringBuilder b, double ymax, String label) {
    yAxis(b, ymax, label, W);
  }

  private static void yAxis(StringBuilder b, double ymax, String label, int width) {
    int plotH = H - TOP - BOTTOM;
    for (int i = 0; i <= 4; i++) {
      double v = ymax * i / 4;
      double y = TOP + plotH - plotH * i / 4.0;
      b.append("<line x1=\"").append(LEFT).append("\" x2=\"").append(width - RIGHT)
          .append("\" y1=\"").append(n(y)).append("\" y2=\"").append(n(y))
          .append("\" stroke=\"#e5e5e5\"/>")
          .append("<text x=\"").append(LEFT - 6).append("\" y=\"").append(n(y + 4))
          .append("\" text-anchor=\"end\" font-size=\"11\">").append(BalanceHtml.fmt(v))
          .append("</text>");
    }
    b.append("<text x=\"14\" y=\"").append(TOP + plotH / 2).append("\" font-size=\"11\" "
        + "text-anchor=\"middle\" transform=\"rotate(-90 14 ").append(TOP + plotH / 2)
        .append(")\">").append(BalanceHtml.esc(label)).append("</text>");
  }

  /** A dashed line across the plot, labelled at its right end (or left: two labels may meet). */
  private static void hline(StringBuilder b, double y, String color, String cls, String label,
                            boolean labelLeft) {
    hline(b, y, color, cls, label, labelLeft, W);
  }

  private static void hline(StringBuilder b, double y, String color, String cls, String label,
                            boolean labelLeft, int width) {
    b.append("<line class=\"").append(cls).append("\" x1=\"").append(LEFT).append("\" x2=\"")
        .append(width - RIGHT).append("\" y1=\"").append(n(y)).append("\" y2=\"").append(n(y))
        .append("\" stroke=\"").append(color).append("\" stroke-dasharray=\"6 4\"/>")
        .append("<text x=\"").append(labelLeft ? LEFT + 4 : width - RIGHT - 4).append("\" y=\"")
        .append(n(y - 4)).append("\" text-anchor=\"").append(labelLeft ? "start" : "end")
        .append("\" font-size=\"11\" fill=\"").append(color).append("\">")
        .append(BalanceHtml.esc(label)).append("</text>");
  }

  private static void legend(StringBuilder b, String[] colors, String[] labels) {
    int x = LEFT;
    for (int i = 0; i < labels.length; i++) {
      b.append("<rect x=\"").append(x).append("\" y=\"8\" width=\"12\" height=\"12\" fill=\"")
          .append(colors[i]).append("\"/><text x=\"").append(x + 16)
          .append("\" y=\"18\" font-size=\"12\">").append(BalanceHtml.esc(labels[i]))
          .append("</text>");
      x += 24 + 7 * labels[i].length();
    }
  }

  private static double at(List<Double> l, int i) {
    return i < l.size() && l.get(i) != null && !l.get(i).isNaN() ? l.get(i) : 0.0;
  }

  /** Partitions drawn at full width; more widen the chart, which then scrolls sideways. */
  static final int FIT_PARTITIONS = 64;
  /** Width of one partition's slot, in pixels, when the chart scrolls (bars stay visible). */
  static final int MIN_SLOT = 12;

  /**
   * Bars of the loads before (grey: plain Spark's placement) and after (blue: sparkbalance's)
   * per partition, avg and lower bound lines, and the hottest key's partitions labelled. With
   * more than {@link #FIT_PARTITIONS} partitions every slot keeps {@link #MIN_SLOT} pixels and
   * the chart scrolls inside its box, so a 200-partition join's bars stay visible.
   */
  static String loadBars(List<Double> before, List<Double> after, Double avg, Double lb,
                         com.fasterxml.jackson.databind.JsonNode hottest, String[] names) {
    return loadBars(before, after, avg, lb, hottest, names, 1);
  }

  /**
   * The max load of each run of {@code group} consecutive partitions: with many partitions,
   * one page-wide chart of the peaks (where the heavy partitions are, before and after)
   * above the scrolling chart of every partition.
   */
  static String groupedBars(List<Double> before, List<Double> after, Double lb,
                            com.fasterxml.jackson.databind.JsonNode hottest, String[] names) {
    int parts = Math.max(before.size(), after.size());
    int group = (int) Math.ceil(parts / (double) FIT_PARTITIONS);
    return loadBars(peaks(before, group), peaks(after, group), null, lb, null,
        new String[] {"max " + names[0], "max " + names[1]}, group);
  }

  private static List<Double> peaks(List<Double> l, int group) {
    List<Double> out = new java.util.ArrayList<>();
    for (int i = 0; i < l.size(); i += group) {
      double m = 0;
      for (int j = i; j < Math.min(l.size(), i + group); j++) m = Math.max(m, at(l, j));
      out.add(m);
    }
    return out;
  }

  private static String loadBars(List<Double> before, List<Double> after, Double avg, Double lb,
                                 com.fasterxml.jackson.databind.JsonNode hottest, String[] names,
                                 int group) {
    int parts = Math.max(before.size(), after.size());
    double top = lb == null ? 0 : lb;
    for (int i = 0; i < parts; i++) top = Math.max(top, Math.max(at(before, i), at(after, i)));
    double ymax = niceMax(top * 1.08);  // headroom for the hot-key labels
    int width = parts > FIT_PARTITIONS ? LEFT + RIGHT + parts * MIN_SLOT : W;
    int plotW = width - LEFT - RIGHT, plotH = H - TOP - BOTTOM;
    double slot = plotW / (double) parts;
    int series = (before.isEmpty() ? 0 : 1) + (after.isEmpty() ? 0 : 1);
    double bar = Math.max(1.0, slot * 0.8 / Math.max(series, 1));
    String cls = group > 1 ? "partition-group" : "partition";
    StringBuilder b = new StringBuilder("<div class=\"sparkbalance-scroll\" style=\"overflow-x:auto;"
        + "max-width:100%\"><svg id=\"sparkbalance-loads" + (group > 1 ? "-grouped" : "")
        + "\" class=\"sparkbalance-chart\" "
        + "xmlns=\"http://www.w3.org/2000/svg\" width=\"" + width + "\" height=\"" + H
        + "\" viewBox=\"0 0 " + width + " " + H + "\" role=\"img\" data-partitions=\"" + parts
        + "\">");
    yAxis(b, ymax, "load", width);
    List<String> colors = new java.util.ArrayList<>(), labels = new java.util.ArrayList<>();
    if (!before.isEmpty()) { colors.add(BalanceHtml.BEFORE_COLOR); labels.add(names[0]); }
    if (!after.isEmpty()) { colors.add(BalanceHtml.AFTER_COLOR); labels.add(names[1]); }
    if (lb != null) { colors.add(BalanceHtml.LB_COLOR); labels.add("lower bound"); }
    legend(b, colors.toArray(new String[0]), labels.toArray(new String[0]));
    int labelEvery = Math.max(1, (int) Math.ceil(parts / (plotW / 28.0)));
    for (int i = 0; i < parts; i++) {
      double x0 = LEFT + i * slot + slot * 0.1;
      b.append("<g class=\"").append(cls).append("\" data-partition=\"").append(i * group)
          .append("\"");
      if (!before.isEmpty()) b.append(" data-before=\"").append(before.get(i)).append("\"");
      if (!after.isEmpty()) b.append(" data-after=\"").append(after.get(i)).append("\"");
      b.append("><title>partition ").append(i * group)
          .append(group > 1 ? "-" + Math.min(parts * group, (i + 1) * group) + " (max)" : "");
      if (!before.isEmpty()) b.append(": before ").append(BalanceHtml.fmt(before.get(i)));
      if (!after.isEmpty()) b.append(", after ").append(BalanceHtml.fmt(after.get(i)));
      b.append("</title>");
      int s = 0;
      for (List<Double> l : List.of(before, after)) {
        if (l.isEmpty()) continue;
        double h = plotH * at(l, i) / ymax;
        b.append("<rect x=\"").append(n(x0 + s * bar)).append("\" y=\"").append(n(TOP + plotH - h))
            .append("\" width=\"").append(n(bar)).append("\" height=\"").append(n(h))
            .append("\" fill=\"").append(l == before ? BalanceHtml.BEFORE_COLOR : BalanceHtml.AFTER_COLOR)
            .append("\"/>");
        s++;
      }
      if (i % labelEvery == 0) {
        b.append("<text x=\"").append(n(LEFT + (i + 0.5) * slot)).append("\" y=\"")
            .append(TOP + plotH + 14).append("\" text-anchor=\"middle\" font-size=\"10\">")
            .append(i * group).append("</text>");
      }
      b.append("</g>");
    }
    if (hottest != null) hotLabels(b, hottest, before, after, slot, bar, ymax);
    if (avg != null) hline(b, TOP + plotH - plotH * avg / ymax, "#555555", "avg",
        "avg " + BalanceHtml.fmt(avg), true, width);
    if (lb != null) hline(b, TOP + plotH - plotH * lb / ymax, BalanceHtml.LB_COLOR, "lower-bound",
        "lower bound " + BalanceHtml.fmt(lb), false, width);
    b.append("<text x=\"").append(LEFT + plotW / 2).append("\" y=\"").append(H - 4)
        .append("\" text-anchor=\"middle\" font-size=\"11\">partition</text>");
    return b.append("</svg></div>").toString();
  }

  /** "hot key K" above the bar of the partition the hottest key had before and after. */
  private static void hotLabels(StringBuilder b, com.fasterxml.jackson.databind.JsonNode h,
                                List<Double> before, List<Double> after, double slot, double bar,
                                double ymax) {
    int plotH = H - TOP - BOTTOM;
    String key = BalanceKeys.key(h);
    String[] which = {"before", "after"};
    List<List<Double>> loads = List.of(before, after);
    int s = 0;
    for (int w = 0; w < 2; w++) {
      if (loads.get(w).isEmpty()) continue;
      com.fasterxml.jackson.databind.JsonNode p = h.get(which[w]);
      if (p != null && p.isNumber() && p.intValue() >= 0 && p.intValue() < loads.get(w).size()) {
        int i = p.intValue();
        double x = LEFT + i * slot + slot * 0.1 + (s + 0.5) * bar;
        double y = TOP + plotH - plotH * at(loads.get(w), i) / ymax - 4;
        b.append("<text class=\"hot-key-label\" data-which=\"").append(which[w])
            .append("\" data-partition=\"").append(i).append("\" x=\"").append(n(x))
            .append("\" y=\"").append(n(y)).append("\" text-anchor=\"middle\" font-size=\"11\" "
            + "font-weight=\"bold\" fill=\"").append(w == 0 ? "#555555" : BalanceHtml.AFTER_COLOR)
            .append("\">hot key ").append(BalanceHtml.esc(key)).append("</text>");
      }
      s++;
    }
  }

  /**
   * The record of each migration keyed by the batch that decided it: a move decided after
   * batch t rides in batch t+1's shuffle, and its record says so ({@code moved_for_batch});
   * a migration run on its own, or a record without that field, counts for its own batch.
   */
  static java.util.Map<Long, BalanceRecord> movesByDecidingBatch(List<BalanceRecord> recs) {
    java.util.Map<Long, BalanceRecord> out = new java.util.LinkedHashMap<>();
    for (BalanceRecord r : recs) {
      if (!r.isMigration()) continue;
      Long at = r.movedForBatch() != null ? r.movedForBatch() : r.batch();
      if (at != null) out.put(at, r);
    }
    return out;
  }

  /**
   * Max/avg load of each batch as it ran (grey, the records' "before") and under the layout
   * its plan made (blue, "after": the same loads when nothing moved), the lower bound over
   * avg when known, and a red marker at each batch whose plan moved keys (the move itself
   * rides in the next batch's shuffle).
   */
  static String timeline(List<BalanceRecord> recs, long current) {
    int k = recs.size();
    double top = 1.0;
    for (BalanceRecord r : recs) {
      for (String w : new String[] {"before", "after"}) {
        Double im = r.imbalance(w);
        if (im != null) top = Math.max(top, im);
      }
    }
    double ymax = niceMax(top * 1.05);
    int plotW = W - LEFT - RIGHT, plotH = H - TOP - BOTTOM;
    double step = k > 1 ? plotW / (double) (k - 1) : 0;
    StringBuilder b = new StringBuilder("<svg id=\"sparkbalance-timeline-chart\" "
        + "class=\"sparkbalance-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + W
        + "\" height=\"" + H + "\" viewBox=\"0 0 " + W + " " + H + "\" role=\"img\" data-batches=\""
        + k + "\">");
    yAxis(b, ymax, "max / avg load");
    legend(b, new String[] {BalanceHtml.BEFORE_COLOR, BalanceHtml.AFTER_COLOR, BalanceHtml.LB_COLOR,
        "#ff7f0e"}, new String[] {"as run (before)", "after its plan", "keys moved", "lower bound / avg"});
    double y1 = TOP + plotH - plotH / ymax;
    hline(b, y1, "#999999", "even", "1.0 = even", false);
    java.util.Map<Long, BalanceRecord> moves = movesByDecidingBatch(recs);
    StringBuilder lineB = new StringBuilder(), lineA = new StringBuilder(), lbLine = new StringBuilder();
    for (int i = 0; i < k; i++) {
      BalanceRecord r = recs.get(i);
      double x = k > 1 ? LEFT + i * step : LEFT + plotW / 2.0;
      BalanceRecord mv = r.batch() == null ? null : moves.get(r.batch());
      if (mv != null) {
        b.append("<g class=\"migration\" data-batch=\"").append(r.batch())
            .append("\" data-id=\"").append(mv.id()).append("\"><title>batch ").append(r.batch())
            .append(": its plan moved ").append(BalanceHtml.fmt(mv.keysMoved())).append(" keys, ")
            .append(BalanceHtml.bytes(mv.bytesMoved())).append(" (with batch ")
            .append(BalanceHtml.fmt(mv.batch())).append(")</title><line x1=\"").append(n(x))
            .append("\" x2=\"").append(n(x)).append("\" y1=\"").append(TOP).append("\" y2=\"")
            .append(TOP + plotH).append("\" stroke=\"").append(BalanceHtml.LB_COLOR)
            .append("\" stroke-dasharray=\"3 3\"/><path d=\"M").append(n(x - 5)).append(" ")
            .append(TOP).append(" L").append(n(x + 5)).append(" ").append(TOP).append(" L")
            .append(n(x)).append(" ").append(TOP + 8).append(" Z\" fill=\"")
            .append(BalanceHtml.LB_COLOR).append("\"/><text x=\"").append(n(x + 6))
            .append("\" y=\"").append(TOP + 10).append("\" font-size=\"10\" fill=\"")
            .append(BalanceHtml.LB_COLOR).append("\">").append(BalanceHtml.fmt(mv.keysMoved()))
            .append(" keys</text></g>");
      }
      for (String w : new String[] {"before", "after"}) {
        Double im = r.imbalance(w);
        if (im == null) continue;
        double y = TOP + plotH - plotH * im / ymax;
        StringBuilder line = w.equals("before") ? lineB : lineA;
        line.append(line.length() == 0 ? "" : " ").append(n(x)).append(",").append(n(y));
        b.append("<circle class=\"batch ").append(w).append("\" cx=\"").append(n(x))
            .append("\" cy=\"").append(n(y)).append("\" r=\"").append(r.id() == current ? 5 : 3)
            .append("\" fill=\"").append(w.equals("before") ? "#888888" : BalanceHtml.AFTER_COLOR)
            .append("\" data-batch=\"").append(r.batch() == null ? "" : r.batch())
            .append("\" data-imbalance=\"").append(im).append("\"><title>batch ")
            .append(r.batch() == null ? "-" : r.batch()).append(w.equals("before") ? " as run"
                : " after its plan").append(": max ").append(BalanceHtml.fmt(r.max(w)))
            .append(", avg ").append(BalanceHtml.fmt(r.avg(w))).append(" (")
            .append(BalanceHtml.fmt(im)).append(")</title></circle>");
      }
      Double lb = r.lowerBound(), avg = r.avg("before");
      if (lb != null && avg != null && avg > 0) {
        lbLine.append(lbLine.length() == 0 ? "" : " ").append(n(x)).append(",")
            .append(n(TOP + plotH - plotH * (lb / avg) / ymax));
      }
      if (k <= 40 || i % (int) Math.ceil(k / 40.0) == 0) {
        b.append("<text x=\"").append(n(x)).append("\" y=\"").append(TOP + plotH + 14)
            .append("\" text-anchor=\"middle\" font-size=\"10\">")
            .append(r.batch() == null ? "#" + r.id() : r.batch()).append("</text>");
      }
    }
    if (lbLine.length() > 0) {
      b.append("<polyline class=\"lower-bound\" points=\"").append(lbLine)
          .append("\" fill=\"none\" stroke=\"#ff7f0e\" stroke-dasharray=\"2 3\"/>");
    }
    b.append("<polyline class=\"imbalance before\" points=\"").append(lineB).append("\" fill=\"none\" "
        + "stroke=\"#888888\" stroke-width=\"1.5\"/>");
    if (lineA.length() > 0) {
      b.append("<polyline class=\"imbalance after\" points=\"").append(lineA).append("\" "
          + "fill=\"none\" stroke=\"").append(BalanceHtml.AFTER_COLOR).append("\" stroke-width=\"2\"/>");
    }
    b.append("<text x=\"").append(LEFT + plotW / 2).append("\" y=\"").append(H - 4)
        .append("\" text-anchor=\"middle\" font-size=\"11\">batch</text>");
    return b.append("</svg>").toString();
  }
}
