package io.sparkbalance.bridge;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import org.apache.spark.status.StageDataWrapper;
import org.apache.spark.status.TaskDataWrapper;
import org.apache.spark.status.api.v1.StageData;
import org.apache.spark.status.api.v1.StageStatus;
import org.apache.spark.util.kvstore.KVStore;

/**
 * Stage skew for every stage of the application, as DataFlint's skew alert measures it: the
 * slowest task's run time over the median task's. A stage is skewed when its max is at least
 * {@code ratio} times its median and at least {@code minMillis} longer (a 30 ms stage of
 * 2 ms tasks is not worth a look). Each stage links to the sparkbalance record whose Spark
 * jobs ran it or whose returned RDD it computes (the record that balanced it); a skewed stage
 * without one shows the {@code sb.diagnose} call
 * that would tell what balancing would buy.
 *
 * <p>Read from the application status store (Spark's own stage and task rows,
 * {@code StageDataWrapper} and {@code TaskDataWrapper}, whose accessors are the same in Spark
 * 3.5 and 4.x), so the live UI and the History Server show the same table.
 */
final class BalanceStages {
  private BalanceStages() {}

  public static final String RATIO_CONF = "spark.sparkbalance.ui.skewRatio";
  public static final String MIN_MILLIS_CONF = "spark.sparkbalance.ui.skewMinMillis";
  /** max / median at which a stage counts as skewed (DataFlint warns from about 5x). */
  static final double DEFAULT_RATIO = 5.0;
  /** max - median below which a stage never counts as skewed, in milliseconds. */
  static final long DEFAULT_MIN_MILLIS = 10_000L;
  /** Stages listed, newest first (a long application keeps the page small). */
  static final int LIMIT = 500;
  /** Task-store index of {@code executorRunTime}, a child of the stage index. */
  static final String RUN_TIME_INDEX = "ert";

  /** One stage attempt's task run times (median as Spark's task summary picks it: the
   * value at index {@code min(0.5 * count, count - 1)} of the sorted times). */
  static final class Stage {
    final int id, attempt, tasks;
    final String name;
    final long median, max;
    final long[] jobIds;
    long[] rddIds = new long[0];
    /** Skipped: its shuffle output was reused, so it ran no task (listed by count only). */
    boolean skipped;

    Stage(int id, int attempt, String name, int tasks, long median, long max, long[] jobIds) {
      this.id = id;
      this.attempt = attempt;
      this.name = name;
      this.tasks = tasks;
      this.median = median;
      this.max = max;
      this.jobIds = jobIds;
    }

    Double ratio() { return tasks > 0 ? max / (double) Math.max(median, 1L) : null; }

    boolean skewed(double ratio, long minMillis) {
      return tasks >= 2 && max >= ratio * Math.max(median, 1L) && max - median >= minMillis;
    }
  }

  /** The stages in the store, newest first, at most {@link #LIMIT}, with their task times. */
  static List<Stage> read(KVStore kv) {
    List<StageDataWrapper> all = new ArrayList<>();
    try {
      for (StageDataWrapper w : kv.view(StageDataWrapper.class)) all.add(w);
    } catch (Exception e) {
      throw new IllegalStateException("could not read the stages", e);
    }
    all.sort((a, b) -> a.info().stageId() != b.info().stageId()
        ? Integer.compare(b.info().stageId(), a.info().stageId())
        : Integer.compare(b.info().attemptId(), a.info().attemptId()));
    List<Stage> out = new ArrayList<>();
    for (StageDataWrapper w : all.subList(0, Math.min(LIMIT, all.size()))) {
      StageData s = w.info();
      long[] times = runTimes(kv, s.stageId(), s.attemptId());
      long[] jobs = new long[w.jobIds().size()];
      int j = 0;
      scala.collection.Iterator<Object> it = w.jobIds().iterator();
      while (it.hasNext()) jobs[j++] = ((Number) it.next()).longValue();
      Stage st = new Stage(s.stageId(), s.attemptId(), s.name(), times.length,
          times.length == 0 ? 0 : times[Math.min(times.length / 2, times.length - 1)],
          times.length == 0 ? 0 : times[times.length - 1], jobs);
      st.rddIds = rddIds(s);
      st.skipped = s.status() == StageStatus.SKIPPED;
      out.add(st);
    }
    return out;
  }

  /**
   * The RDD ids of a stage: reflective, {@code StageData.rddIds} is a Scala 2.13
   * {@code immutable.Seq} on Spark 4.x and a 2.12 {@code collection.Seq} on 3.5.
   */
  static long[] rddIds(StageData s) {
    try {
      Object seq = StageData.class.getMethod("rddIds").invoke(s);
      scala.collection.Iterator<?> it =
          (scala.collection.Iterator<?>) seq.getClass().getMethod("iterator").invoke(seq);
      List<Long> out = new ArrayList<>();
      while (it.hasNext()) out.add(((Number) it.next()).longValue());
      long[] a = new long[out.size()];
      for (int i = 0; i < a.length; i++) a[i] = out.get(i);
      return a;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return new long[0];
    }
  }

  /** Run times (ms) of the stage attempt's finished tasks, ascending. */
  static long[] runTimes(KVStore kv, int stageId, int attempt) {
    List<Long> t = new ArrayList<>();
    try {
      for (TaskDataWrapper task : kv.view(TaskDataWrapper.class).index(RUN_TIME_INDEX)
          .parent(new int[] {stageId, attempt})) {
        if ("SUCCESS".equals(task.status()) && task.executorRunTime() >= 0) {
          t.add(task.executorRunTime());
        }
      }
    } catch (Exception e) {
      throw new IllegalStateException("could not read the tasks of stage " + stageId, e);
    }
    long[] out = new long[t.size()];
    for (int i = 0; i < out.length; i++) out[i] = t.get(i);
    Arrays.sort(out);
    return out;
  }

  /** The records that ran each job id. */
  static Map<Long, BalanceRecord> byJob(List<BalanceRecord> records) {
    Map<Long, BalanceRecord> out = new HashMap<>();
    for (BalanceRecord r : records) for (long j : r.jobIds()) out.put(j, r);
    return out;
  }

  /** The records whose operation returned each RDD id (field {@code rdd_ids}). */
  static Map<Long, BalanceRecord> byRdd(List<BalanceRecord> records) {
    Map<Long, BalanceRecord> out = new HashMap<>();
    for (BalanceRecord r : records) {
      com.fasterxml.jackson.databind.JsonNode ids = r.node().get("rdd_ids");
      if (ids != null && ids.isArray()) for (com.fasterxml.jackson.databind.JsonNode x : ids) {
        if (x.isNumber()) out.put(x.longValue(), r);
      }
    }
    return out;
  }

  /** The record a stage belongs to: one whose jobs ran it, else one whose returned RDD it
   * computes (a lazy RDD operation's jobs run later, under the user's action); or null. */
  static BalanceRecord recordOf(Stage s, Map<Long, BalanceRecord> byJob,
                                Map<Long, BalanceRecord> byRdd) {
    for (long j : s.jobIds) if (byJob.containsKey(j)) return byJob.get(j);
    for (long r : s.rddIds) if (byRdd.containsKey(r)) return byRdd.get(r);
    return null;
  }

  /** The {@code sb.diagnose} call that would measure a stage: RDD or DataFrame by its name. */
  static String diagnoseHint(Stage s) {
    String name = s.name == null ? "" : s.name;
    boolean rdd = name.matches(".*\\b(reduceByKey|groupByKey|aggregateByKey|combineByKey|"
        + "partitionBy|join|cogroup)\\b.*");
    return rdd ? "sb.diagnose(pairs, num_partitions=" + s.tasks + ")"
        : "sb.diagnose(df, \"<key column>\", num_partitions=" + s.tasks + ")";
  }

  /** A record's short name: its operation, and the batch for a keyed-state batch. */
  static String recordLabel(BalanceRecord r) {
    String op = r.operation() == null ? r.kind() : r.operation();
    if (r.batch() == null) return op;
    return "batch".equals(op) ? "batch " + r.batch() : op + " batch " + r.batch();
  }

  /** The section of the list page: one row per stage attempt that was not skipped, skewed
   * ones marked; skipped stages (a stream's batches skip one per reused shuffle) are only
   * counted, as rows of dashes they would fill a screen. */
  static String html(List<Stage> stages, List<BalanceRecord> records, double ratio,
                     long minMillis, Function<String, String> link) {
    Map<Long, BalanceRecord> byJob = byJob(records), byRdd = byRdd(records);
    List<Stage> ran = new ArrayList<>();
    for (Stage s : stages) if (!s.skipped) ran.add(s);
    int skewed = 0;
    for (Stage s : ran) if (s.skewed(ratio, minMillis)) skewed++;
    StringBuilder b = new StringBuilder("<h4 id=\"sparkbalance-stage-skew\">Stage skew <small><a href=\"")
        .append(BalanceHtml.esc(link.apply("/balance/?view=stages"))).append("\">(own page)</a>"
            + "</small></h4><p>")
        .append(skewed).append(" of ").append(ran.size()).append(" stage attempts skewed "
            + "(slowest task &ge; ").append(BalanceHtml.fmt(ratio)).append("&times; the median and "
            + "&ge; ").append(BalanceHtml.fmt(minMillis / 1000.0)).append(" s longer; ")
        .append(RATIO_CONF).append(", ").append(MIN_MILLIS_CONF).append("). Task time is "
            + "executor run time. <span id=\"sparkbalance-stages-skipped\">")
        .append(stages.size() - ran.size()).append(" skipped stages (shuffle output reused, "
            + "no tasks) not listed.</span></p>");
    b.append("<table class=\"").append(BalanceHtml.TABLE).append("\" id=\"sparkbalance-stages\">"
        + "<thead><tr><th>Stage</th><th>Name</th><th>Tasks</th><th>Median task s</th>"
        + "<th>Max task s</th><th>Max / median</th><th>Skewed</th><th>Balanced by / try</th>"
        + "</tr></thead><tbody>");
    for (Stage s : ran) {
      BalanceRecord by = recordOf(s, byJob, byRdd);
      boolean sk = s.skewed(ratio, minMillis);
      String fix = by != null
          ? "<a href=\"" + BalanceHtml.esc(link.apply("/balance/operation/?id=" + by.id()))
              + "\">#" + by.id() + " " + BalanceHtml.esc(recordLabel(by)) + "</a>"
          : sk ? "<code>" + BalanceHtml.esc(diagnoseHint(s)) + "</code>" : BalanceHtml.DASH;
      b.append("<tr data-stage=\"").append(s.id).append(".").append(s.attempt).append("\"")
          .append(sk ? " class=\"skewed\" style=\"background:#fde2e1\"" : "").append(">")
          .append(BalanceHtml.cell("stage", s.id, "<a href=\"" + BalanceHtml.esc(link.apply(
              "/stages/stage/?id=" + s.id + "&attempt=" + s.attempt)) + "\">" + s.id
              + (s.attempt > 0 ? "." + s.attempt : "") + "</a>"))
          .append(BalanceHtml.cell("name", s.name, BalanceHtml.esc(s.name)))
          .append(BalanceHtml.cell("tasks", s.tasks, String.valueOf(s.tasks)))
          .append(BalanceHtml.cell("median_ms", s.median, BalanceHtml.fmt(s.median / 1000.0)))
          .append(BalanceHtml.cell("max_ms", s.max, BalanceHtml.fmt(s.max / 1000.0)))
          .append(BalanceHtml.cell("ratio", s.ratio(), BalanceHtml.fmt(s.ratio())))
          .append(BalanceHtml.cell("skewed", sk, sk ? "<b>skewed</b>" : "no"))
          .append(BalanceHtml.cell("record", by == null ? null : by.id(), fix))
          .append("</tr>");
    }
    return b.append("</tbody></table>").toString();
  }
}
