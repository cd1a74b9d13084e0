package scala;

/** Compile-only stub: Scala 2.12's marker trait, which Spark 3.5's coalesce checks for. */
public interface Serializable extends java.io.Serializable {}
