# The README's two commands: `make demo` and `make test`. Both set everything up first:
# a virtual environment, the package with its extras, and the JVM bridge jar.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.sparkbalance-installed
JAR    := jvm_bridge/build/sparkbalance-bridge.jar
JAVA_SOURCES := $(shell find jvm_bridge -name '*.java' 2>/dev/null)
PYTEST_FLAGS ?= -q -p no:cacheprovider

# PySpark 3.5 (the long-term line): a second venv, outside the package's own .venv.
VENV35   ?= .venv35
PYTHON35 ?= $(PYTHON)
PY35     := $(VENV35)/bin/python
STAMP35  := $(VENV35)/.sparkbalance-deps
# The Spark-dependent tests run under 3.5 too, plus the integration tests that cover the
# DataFrame placement, the listener and the keyed state on a local cluster.
TESTS35  ?= tests/spark integration/test_cluster_routing.py integration/test_spark_submit.py

.PHONY: setup demo test test-unit test-spark test-spark35 test-integration bench dist clean

setup: $(STAMP) $(JAR)

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): setup.py pyproject.toml | $(PY)
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

# PySpark 3.5 venv: the same tests, the package from this checkout (PYTHONPATH), no install.
$(STAMP35):
	$(PYTHON35) -m venv $(VENV35)
	$(PY35) -m pip install --quiet --upgrade pip
	$(PY35) -m pip install --quiet "pyspark==3.5.*" "numpy>=1.26,<2" "cloudpickle>=3.0" \
	    "pandas>=2.2,<3" "pyarrow>=15" "pytest>=8" "hypothesis>=6.100" "pytest-timeout>=2.3"
	touch $(STAMP35)

test-spark35: $(STAMP35) $(JAR)
	PYTHONPATH=$(CURDIR) $(PY35) -m pytest $(PYTEST_FLAGS) $(TESTS35)

# dist/: the wheel (with the bridge jar as package data), the sdist (sources, jvm_bridge/
# sources, tests) and the --py-files zip for spark-submit.
dist: setup
	$(PY) -m pip install --quiet build
	rm -rf dist
	SPARKBALANCE_BUILD_PYTHON=$(abspath $(PY)) SPARKBALANCE_REQUIRE_JAR=1 \
	    $(PY) -m build --sdist --wheel --outdir dist .
	$(PY) -c "import sparkbalance as sb; print(sb.pyfiles_zip(f'dist/sparkbalance-{sb.__version__}-pyfiles.zip'))"

bench: setup
	$(PY) -m sparkbalance bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(VENV35) dist jvm_bridge/build bench-out demo-out .pytest_cache build *.egg-info
