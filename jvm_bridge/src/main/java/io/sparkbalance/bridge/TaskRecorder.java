package io.sparkbalance.bridge;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.scheduler.TaskInfo;

/**
 * Records finished tasks, stage attempts and executors as flat rows inside the JVM.
 *
 * <p>The Python facade ({@code sparkbalance.spark.metrics.jvm_recorder.JvmTaskMetricsListener}) reads
 * them as one tab-separated String per call ({@link #tasksSince(int)},
 * {@link #stagesTsv()}, {@link #executorsTsv()}), so a snapshot costs one py4j round
 * trip however many tasks ran (each element of a py4j array would be one trip).
 * Column order must match {@code sparkbalance/spark/metrics/records.py}. Strings are escaped
 * (backslash, tab, newline); a null string is written as {@code \N}.
 *
 * <p>Events of one listener-bus queue are delivered by one thread; readers run on
 * py4j threads, hence the {@code synchronized} methods.
 */
public class TaskRecorder extends SparkListener {
  /** Local property set by SparkContext.setJobGroup. */
  public static final String JOB_GROUP_PROPERTY = "spark.jobGroup.id";
  static final String NULL = "\\N";

  private final String jobGroup;  // null: record every job
  private final List<String> tasks = new ArrayList<>();
  private final Map<Long, String[]> stages = new LinkedHashMap<>();
  private final Map<Long, String> stageGroups = new LinkedHashMap<>();
  private final Map<String, String[]> executors = new LinkedHashMap<>();

  public TaskRecorder() { this(null); }

  /** @param jobGroup record only tasks of jobs in this job group; null for all. */
  public TaskRecorder(String jobGroup) { this.jobGroup = jobGroup; }

  private static long stageKey(int stageId, int attempt) {
    return (((long) stageId) << 32) | (attempt & 0xffffffffL);
  }

  static String esc(String s) {
    if (s == null) return NULL;
    if (s.indexOf('\\') < 0 && s.indexOf('\t') < 0 && s.indexOf('\n') < 0
        && s.indexOf('\r') < 0) return s;
    StringBuilder b = new StringBuilder(s.length() + 8);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '\\': b.append("\\\\"); break;
        case '\t': b.append("\\t"); break;
        case '\n': b.append("\\n"); break;
        case '\r': b.append("\\r"); break;
        default: b.append(c);
      }
    }
    return b.toString();
  }

  private static String optLong(scala.Option<Object> o) {
    return o.isDefined() ? String.valueOf(((Number) o.get()).longValue()) : NULL;
  }

  @Override
  public synchronized void onStageSubmitted(SparkListenerStageSubmitted ev) {
    StageInfo info = ev.stageInfo();
    Properties p = ev.properties();
    String group = p == null ? null : p.getProperty(JOB_GROUP_PROPERTY);
    long key = stageKey(info.stageId(), info.attemptNumber());
    stageGroups.put(key, group);
    stages.put(key, new String[] {
        String.valueOf(info.stageId()), String.valueOf(info.attemptNumber()), esc(info.name()),
        String.valueOf(info.numTasks()), optLong(info.submissionTime()), NULL, "0", esc(group)});
  }

  @Override
  public synchronized void onStageCompleted(SparkListenerStageCompleted ev) {
    StageInfo info = ev.stageInfo();
    long key = stageKey(info.stageId(), info.attemptNumber());
    String[] old = stages.get(key);
    String submitted = optLong(info.submissionTime());
    if (NULL.equals(submitted) && old != null) submitted = old[4];
    stages.put(key, new String[] {
        String.valueOf(info.stageId()), String.valueOf(info.attemptNumber()), esc(info.name()),
        String.valueOf(info.numTasks()), submitted, optLong(info.completionTime()),
        info.failureReason().isDefined() ? "1" : "0", esc(stageGroups.get(key))});
  }

  @Override
  public synchronized void onTaskEnd(SparkListenerTaskEnd ev) {
    long key = stageKey(ev.stageId(), ev.stageAttemptId());
    String group = stageGroups.get(key);
    if (jobGroup != null && !jobGroup.equals(group)) return;
    TaskInfo info = ev.taskInfo();
    TaskMetrics m = ev.taskMetrics();  // may be null for failed attempts
    long launch = info.launchTime(), finish = info.finishTime();
    long duration = finish > 0 ? Math.max(0L, finish - launch) : 0L;
    StringBuilder b = new StringBuilder(160);
    b.append(ev.stageId()).append('\t').append(ev.stageAttemptId()).append('\t')
     .append(info.partitionId()).append('\t').append(info.taskId()).append('\t')
     .append(info.attemptNumber()).append('\t').append(esc(info.executorId())).append('\t')
     .append(esc(info.host())).append('\t').append(launch).append('\t').append(finish)
     .append('\t').append(duration).append('\t');
    if (m != null) {
      b.append(m.executorRunTime()).append('\t').append(m.executorCpuTime()).append('\t')
       .append(m.inputMetrics().recordsRead()).append('\t')
       .append(m.inputMetrics().bytesRead()).append('\t')
       .append(m.shuffleReadMetrics().recordsRead()).append('\t')
       .append(m.shuffleReadMetrics().totalBytesRead()).append('\t')
       .append(m.shuffleWriteMetrics().recordsWritten()).append('\t')
       .append(m.shuffleWriteMetrics().bytesWritten()).append('\t');
    } else {
      b.append("0\t0\t0\t0\t0\t0\t0\t0\t");
    }
    b.append(info.successful() ? '1' : '0').append('\t').append(info.speculative() ? '1' : '0')
     .append('\t').append(esc(group));
    tasks.add(b.toString());
  }

  @Override
  public synchronized void onExecutorAdded(SparkListenerExecutorAdded ev) {
    executors.put(ev.executorId(), new String[] {
        esc(ev.executorId()), esc(ev.executorInfo().executorHost()),
        String.valueOf(ev.executorInfo().totalCores()), String.valueOf(ev.time()), NULL, NULL});
  }

  @Override
  public synchronized void onExecutorRemoved(SparkListenerExecutorRemoved ev) {
    String[] old = executors.get(ev.executorId());
    if (old == null) old = new String[] {esc(ev.executorId()), "", "0", "-1", NULL, NULL};
    executors.put(ev.executorId(), new String[] {
        old[0], old[1], old[2], old[3], String.valueOf(ev.time()), esc(ev.reason())});
  }

  /** Number of task rows recorded so far. */
  public synchronized int taskCount() { return tasks.size(); }

  /** Task rows {@code [from, taskCount())}, one per line, tab-separated. */
  public synchronized String tasksSince(int from) {
    StringBuilder b = new StringBuilder(Math.max(16, (tasks.size() - from) * 120));
    for (int i = Math.max(0, from); i < tasks.size(); i++) b.append(tasks.get(i)).append('\n');
    return b.toString();
  }

  /** All stage-attempt rows, one per line. */
  public synchronized String stagesTsv() { return join(stages.values()); }

  /** All executor rows seen since attaching, one per line. */
  public synchronized String executorsTsv() { return join(executors.values()); }

  /** Forget all rows (stage to job-group mapping is kept). */
  public synchronized void clear() {
    tasks.clear();
    stages.clear();
    executors.clear();
  }

  private static String join(Iterable<String[]> rows) {
    StringBuilder b = new StringBuilder();
    for (String[] r : rows) b.append(String.join("\t", r)).append('\n');
    return b.toString();
  }
}
