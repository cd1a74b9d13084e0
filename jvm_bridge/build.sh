#!/usr/bin/env bash
# Build jvm_bridge/build/sparkbalance-bridge.jar against the pip-installed PySpark jars.
#
# Usage: bash jvm_bridge/build.sh [PYTHON]   (PYTHON: interpreter whose pyspark to compile
#        against; default $PYTHON, else python3). Needs javac and jar (JDK 17+).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${1:-${PYTHON:-python3}}"
spark_home="$("$py" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
jars="$spark_home/jars"
if [ ! -d "$jars" ]; then
  echo "build.sh: no jars directory under pyspark at $spark_home" >&2
  exit 1
fi
for tool in javac jar; do
  command -v "$tool" >/dev/null || { echo "build.sh: $tool not found (install a JDK 17+)" >&2; exit 1; }
done
out="$here/build"
rm -rf "$out/classes"
mkdir -p "$out/classes"
spark_version="$("$py" -c 'import pyspark; print(pyspark.__version__)')"
case "$spark_version" in
  3.*) echo "build.sh: compile against PySpark 4.x (found $spark_version at $spark_home): the" \
         "one jar serves Spark 3.5 and 4.x, its Spark 3.5 pages are compiled against stubs" >&2
       exit 1 ;;
esac
# --release 17: Spark 4.x runs on Java 17+, so the classes load on any supported JVM.
javac --release 17 -nowarn -cp "$jars/*" -d "$out/classes" \
  $(find "$here/src/main/java" -name '*.java' | sort)
# The Spark 3.5 classes (the Balance tab's javax-servlet pages, the scala.Serializable coalescer): compiled against
# compile-only stubs of those signatures (src/spark35-stubs, which shadow the 4.x classes of the
# same names) and the classes above; only the io.sparkbalance classes go into the jar.
rm -rf "$out/classes35"
mkdir -p "$out/classes35"
javac --release 17 -nowarn -cp "$out/classes:$jars/*" -d "$out/classes35" \
  $(find "$here/src/spark35/java" "$here/src/spark35-stubs/java" -name '*.java' | sort)
cp "$out/classes35/io/sparkbalance/bridge/"*.class "$out/classes/io/sparkbalance/bridge/"
rm -rf "$out/classes35"
# Write a new file and rename it over the old one: a running Spark JVM keeps reading the
# jar it opened (same inode) instead of seeing it change under it.
# Resources (the History Server's service-loader entry under META-INF/services) go in as is.
if [ -d "$here/src/main/resources" ]; then
  cp -R "$here/src/main/resources/." "$out/classes/"
fi
jar --create --file "$out/sparkbalance-bridge.jar.tmp" -C "$out/classes" .
mv -f "$out/sparkbalance-bridge.jar.tmp" "$out/sparkbalance-bridge.jar"
echo "built $out/sparkbalance-bridge.jar"
