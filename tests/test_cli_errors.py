"""``ssvm train`` / ``ssvm path`` failures: checked up front, one line, exit code 2,
outputs written atomically, and ``--resume`` continuing at the state's lambda."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import ssvm.cli
from ssvm.cli import main
from ssvm_core import SolverState

TRAIN = ["train", "--dataset", "synthetic-chain", "--max-passes", "2", "--gap-check-every", "2",
         "--quiet"]
PATH = ["path", "--dataset", "synthetic-multiclass", "--eps", "0.2", "--lam-min", "0.01"]


@pytest.fixture
def no_data(monkeypatch):
    """Fail the test if the command gets as far as loading the data."""
    def load_dataset(*args, **kwargs):
        raise AssertionError("the data were loaded before the error was found")

    monkeypatch.setattr(ssvm.cli.ssvm_data, "load_dataset", load_dataset)


_REAL_SAVEZ = np.savez


def half_savez(file, *args, **kwargs):
    """``numpy.savez`` that dies after writing 10 bytes (a crash or a full disk)."""
    _REAL_SAVEZ(file, *args, **kwargs)
    if hasattr(file, "truncate"):
        file.truncate(10)
    else:
        with open(file, "r+b") as f:
            f.truncate(10)
    raise OSError(5, "Input/output error")


def one_line_error(capsys, *needles) -> str:
    err = capsys.readouterr().err
    assert err.startswith("ssvm: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.mark.parametrize("command", [TRAIN, PATH])
def test_output_folder_that_is_a_file_fails_before_any_work(tmp_path, capsys, no_data, command):
    target = tmp_path / "taken"
    target.write_text("not a folder")
    assert main(command + ["--out", str(target)]) == 2
    one_line_error(capsys, str(target), "existing file")
    assert target.read_text() == "not a folder"
    # A folder below a file cannot be created either.
    assert main(command + ["--out", str(target / "run")]) == 2
    one_line_error(capsys, str(target / "run"))


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="needs a POSIX user for whom folder permissions apply (not root)")
def test_unwritable_output_folder_fails_before_any_work(tmp_path, capsys, no_data):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert main(TRAIN + ["--out", str(locked / "run")]) == 2
        one_line_error(capsys, "cannot write in output folder", str(locked))
        assert not any(locked.iterdir())
    finally:
        locked.chmod(0o700)


def test_os_errors_while_writing_are_one_line(tmp_path, capsys, monkeypatch):
    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ssvm.cli, "save_json", disk_full)
    assert main(TRAIN + ["--out", str(tmp_path / "run")]) == 2
    one_line_error(capsys, "No space left on device")


def test_outputs_are_replaced_atomically(tmp_path, capsys, monkeypatch):
    """A write that dies half-way leaves the previous file of that name whole."""
    out = tmp_path / "run"
    assert main(TRAIN + ["--out", str(out), "--tol", "0"]) == 0

    def half_dump(obj, f, **kwargs):
        f.write('{"config": ')
        raise OSError(5, "Input/output error")

    for module, name, patch, victim in ((np, "savez", half_savez, "model.npz"),
                                        (json, "dump", half_dump, "history.json")):
        before = (out / victim).read_bytes()
        with monkeypatch.context() as m:
            m.setattr(module, name, patch)
            assert main(TRAIN + ["--out", str(out), "--max-passes", "4", "--overwrite"]) == 2
            one_line_error(capsys, "Input/output error")
        assert (out / victim).read_bytes() == before, victim
        assert sorted(p.name for p in out.iterdir()) == ["history.json", "model.npz",
                                                           "state.npz", "train.png"]
        assert [p.name for p in tmp_path.iterdir()] == ["run"]      # no temporary folders
    assert main(TRAIN + ["--out", str(out), "--max-passes", "4", "--overwrite"]) == 0
    assert np.load(out / "model.npz")["w"].ndim == 1
    assert json.loads((out / "history.json").read_text())["summary"]["passes"] == 4


def test_path_outputs_are_atomic_and_the_plot_format_is_explicit(tmp_path, monkeypatch):
    import matplotlib.figure

    from ssvm_paths import RegularizationPath
    from ssvm_paths.plotting import plot_costs

    out = tmp_path / "path"
    assert main(PATH + ["--out", str(out)]) == 0
    png = (out / "path.png").read_bytes()
    real_savefig = matplotlib.figure.Figure.savefig

    def half_savefig(self, fname, **kwargs):
        real_savefig(self, fname, **kwargs)
        with open(fname, "r+b") as f:
            f.truncate(10)
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", half_savefig)
    assert main(PATH + ["--out", str(out), "--overwrite"]) == 2
    assert (out / "path.png").read_bytes() == png
    assert sorted(p.name for p in out.iterdir()) == ["path.json", "path.npz", "path.png"]
    assert [p.name for p in tmp_path.iterdir()] == ["path"]          # no temporary folders
    monkeypatch.undo()
    path = RegularizationPath.load(out / "path.npz")
    npz = (out / "path.npz").read_bytes()
    monkeypatch.setattr(np, "savez", half_savez)
    with pytest.raises(OSError, match="Input/output error"):
        path.save(out / "path.npz")
    assert (out / "path.npz").read_bytes() == npz
    monkeypatch.undo()
    # The format comes from the suffix even though the bytes go to a temporary file.
    plot_costs({"path": path}, out=tmp_path / "costs.svg")
    assert b"<svg" in (tmp_path / "costs.svg").read_bytes()[:1000]
    plot_costs({"path": path}, out=tmp_path / "costs")
    assert (tmp_path / "costs").read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["costs", "costs.svg", "path"]


@pytest.mark.parametrize("value", ["0", "-3"])
def test_max_scored_is_checked_before_the_path(tmp_path, capsys, no_data, value):
    assert main(PATH + ["--out", str(tmp_path / "p"), "--max-scored", value]) == 2
    one_line_error(capsys, f"--max-scored must be a positive integer, got {value}")
    assert not (tmp_path / "p").exists()


def test_resume_continues_at_the_state_lambda_unless_lam_is_given(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(TRAIN + ["--out", str(out), "--lam", "0.05", "--tol", "0"]) == 0
    state = str(out / "state.npz")
    assert SolverState.load(state).lam == 0.05
    assert main(TRAIN + ["--out", str(out), "--resume", state, "--tol", "0",
                         "--overwrite"]) == 0
    summary = json.loads((out / "history.json").read_text())["summary"]
    assert summary["lam"] == 0.05 and summary["passes"] == 4
    assert SolverState.load(state).lam == 0.05
    # An explicit --lam rescales the dual to it, as before.
    assert main(TRAIN + ["--out", str(out), "--resume", state, "--lam", "0.02",
                         "--tol", "0", "--overwrite"]) == 0
    assert json.loads((out / "history.json").read_text())["summary"]["lam"] == 0.02
    assert SolverState.load(state).lam == 0.02


@pytest.mark.parametrize("kind", ["truncated", "text", "missing"])
def test_unreadable_resume_file_is_a_one_line_error(tmp_path, capsys, no_data, kind):
    from ssvm_core import FrankWolfeSSVM
    from ssvm_core.testing import random_chain_data
    from ssvm_oracles import ChainModel

    bad = tmp_path / "state.npz"
    if kind != "missing":
        X, Y = random_chain_data(np.random.default_rng(0), 5, 4, 3, 2)
        FrankWolfeSSVM(ChainModel(3), max_passes=2).fit(X, Y).state_.save(bad)
        data = bad.read_bytes()
        bad.write_bytes(data[:len(data) // 2] if kind == "truncated" else b"lam = 0.01\n")
    assert main(TRAIN + ["--out", str(tmp_path / "run"), "--resume", str(bad)]) == 2
    one_line_error(capsys, str(bad))
