"""``ssvm path`` on generated data: progress, JSON, npz and PNG outputs."""

import json

import numpy as np
import pytest

from ssvm.cli import main
from ssvm_paths import RegularizationPath


@pytest.mark.parametrize("extra", [[], ["--heuristic", "--step", "fw", "--no-cache"]])
def test_path_command_writes_json_npz_and_png(tmp_path, capsys, extra):
    out = tmp_path / "path"
    assert main(["path", "--dataset", "synthetic-multiclass", "--eps", "0.2",
                 "--lam-min", "0.01", "--out", str(out)] + extra) == 0
    report = json.loads((out / "path.json").read_text())["path"]
    path = RegularizationPath.load(out / "path.npz")
    assert report["n_breakpoints"] == path.n_breakpoints >= 2
    assert report["heuristic"] == bool(extra) and path.kappa == (0.7 if extra else 0.9)
    np.testing.assert_allclose(report["lams"], path.lams)
    assert np.all(np.diff(path.lams) < 0)
    assert len(report["test_scores"]) == len(report["scored_lams"]) == min(16, path.n_breakpoints)
    assert set(report["scored_lams"]) <= set(path.lams) and path.lams[-1] in report["scored_lams"]
    assert all(0 <= s <= 1 for s in report["test_scores"])
    if not extra:
        assert max(report["gap_bounds"]) <= 0.2 * (1 + 1e-9)
    assert (out / "path.png").read_bytes()[:4] == b"\x89PNG"
    printed = capsys.readouterr().out
    assert printed.count("breakpoint ") == path.n_breakpoints
    assert f"status {path.status}" in printed


def test_path_command_rejects_bad_eps(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)        # the default output folder is relative: runs/...
    assert main(["path", "--dataset", "synthetic-multiclass", "--eps", "0"]) == 2
    assert "eps must be" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
