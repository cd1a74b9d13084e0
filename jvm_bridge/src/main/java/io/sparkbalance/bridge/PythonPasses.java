package io.sparkbalance.bridge;

import java.lang.reflect.Constructor;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaRDDLike;
import org.apache.spark.api.python.PythonFunction;
import org.apache.spark.api.python.PythonRDD;
import org.apache.spark.api.python.SimplePythonFunction;

/**
 * A Python pass's RDD built in one call from the driver.
 *
 * <p>PySpark builds the RDD of each Python pass ({@code mapPartitions} and the like) in
 * about a dozen py4j round trips: the broadcast threshold, the function object (its
 * environment map and include list converted element by element), the parent's RDD, the
 * {@code PythonRDD} and its Java view, each leaving a reference Python releases later.
 * Everything but the pickled command is the same for every pass of a session, so
 * {@link #pass} takes a function built once as a template and the command's bytes.
 *
 * <p>The function's accumulator is a {@code PythonAccumulatorV2} on Spark 3.5 and a
 * {@code CollectionAccumulator} on 4.x, so the function is made by reflection through its
 * {@code byte[]} constructor, which both have.
 */
public final class PythonPasses {
  private PythonPasses() {}

  /**
   * {@code new PythonRDD(parent, f, preserves, barrier).asJavaRDD()} where {@code f} is
   * {@code template} with {@code command} as its pickled command (its environment,
   * includes, interpreter, version, broadcasts and accumulator kept).
   */
  public static JavaRDD<byte[]> pass(JavaRDDLike<?, ?> parent, SimplePythonFunction template,
                                     byte[] command, boolean preserves, boolean barrier) {
    PythonFunction f = withCommand(template, command);
    return new PythonRDD(parent.rdd(), f, preserves, barrier).asJavaRDD();
  }

  static PythonFunction withCommand(SimplePythonFunction t, byte[] command) {
    try {
      for (Constructor<?> c : SimplePythonFunction.class.getConstructors()) {
        Class<?>[] p = c.getParameterTypes();
        if (p.length == 7 && p[0] == byte[].class) {
          return (PythonFunction) c.newInstance(command, t.envVars(), t.pythonIncludes(),
              t.pythonExec(), t.pythonVer(), t.broadcastVars(),
              MapStats.call(SimplePythonFunction.class, t, "accumulator"));
        }
      }
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("could not make a SimplePythonFunction", e);
    }
    throw new IllegalStateException("SimplePythonFunction has no byte[] constructor");
  }
}
