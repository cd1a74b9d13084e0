"""The API reference generates from the docstrings (pdoc, the docs extra; ``make docs``)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import api_docs  # noqa: E402

#: Warnings of pdoc reading type annotations it cannot resolve (a method named `list` shadowing
#: `list[str]`, string annotations of TYPE_CHECKING imports): known, and not import failures.
_ANNOTATIONS = "Error parsing type annotation"


@pytest.mark.slow
def test_every_module_gets_a_page_and_nothing_fails_to_import(tmp_path):
    if importlib.util.find_spec("pdoc") is None:
        pytest.skip("pdoc missing: pip install 'sparkbalance[docs]' (make setup installs it "
                    "with the test extra)")
    warned = api_docs.generate(tmp_path)
    unexpected = [w for w in warned if _ANNOTATIONS not in w]
    assert not unexpected, "\n".join(unexpected)
    pages = {p.relative_to(tmp_path).with_suffix("").as_posix().replace("/", ".")
             for p in tmp_path.rglob("*.html")}
    assert set(api_docs.modules()) - pages == set()
    assert "sb.diagnose" in (tmp_path / "sparkbalance.html").read_text()
