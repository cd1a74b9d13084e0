# The README's two commands: `make demo` and `make test`. Both set everything up first:
# a virtual environment, the package with its extras, and the JVM bridge jar.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.sparkbalance-installed
JAR    := jvm_bridge/build/sparkbalance-bridge.jar
JAVA_SOURCES := $(shell find jvm_bridge -name '*.java' 2>/dev/null)
PYTEST_FLAGS ?= -q -p no:cacheprovider

.PHONY: setup demo test test-unit test-spark test-integration bench clean

setup: $(STAMP) $(JAR)

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): setup.py | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,plot]"
	touch $(STAMP)

# Compiled with plain javac against the jars pip installed with pyspark (no Maven needed).
$(JAR): $(JAVA_SOURCES) $(STAMP)
	@if [ -f jvm_bridge/build.sh ]; then bash jvm_bridge/build.sh $(PY); \
	else echo "jvm_bridge/build.sh missing: skipping the JVM bridge"; fi

demo: setup
	$(PY) -m sparkbalance demo

# Unit and single-session Spark tests in one process (one shared local[2] session), the
# multi-executor integration tests in another (each module owns its local-cluster).
test: setup
	$(PY) -m pytest $(PYTEST_FLAGS) tests
	$(PY) -m pytest $(PYTEST_FLAGS) integration

test-unit: setup
	$(PY) -m pytest $(PYTEST_FLAGS) tests/unit

test-spark: setup
	$(PY) -m pytest $(PYTEST_FLAGS) tests/spark

test-integration: setup
	$(PY) -m pytest $(PYTEST_FLAGS) integration

# Every benchmark, one process each (`python -m sparkbalance bench --help`); pick some and
# their size with BENCH_ARGS, e.g. `make bench BENCH_ARGS="state routing --quick"`.
BENCH_ARGS ?=
bench: setup
	$(PY) -m sparkbalance bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) jvm_bridge/build bench-out demo-out .pytest_cache build *.egg-info
