"""Smoke test: every paper's ``python -m sparkbalance reproduce <paper> --quick`` runs
(Spark-free) and writes its tables and plots."""
from __future__ import annotations

import pytest

from sparkbalance.__main__ import main
from sparkbalance.bench.reproduce import available_papers


@pytest.mark.parametrize("paper", available_papers())
def test_reproduce_quick(paper, tmp_path, capsys):
    assert main(["reproduce", paper, "--quick", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "et al." in text
    pytest.importorskip("matplotlib")
    assert list(tmp_path.glob(f"{paper}_*.png"))


def test_unknown_paper_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["reproduce", "nope"])
    assert "invalid choice" in capsys.readouterr().err
