"""The options table drives solve, the estimator, the CLI and ssvm_paths: they agree."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from ssvm.cli import build_parser
from ssvm_core import FrankWolfeSSVM, solve
from ssvm_core.options import BY_NAME, DEFAULTS, NAMES, OPTIONS, PATH_NAMES, Choice, validate
from ssvm_core.testing import random_chain_data
from ssvm_oracles import ChainModel
from ssvm_paths._common import solver_options

NOT_OPTIONS = {"oracle", "lam", "state"}


def test_solve_signature_is_the_table():
    params = inspect.signature(solve).parameters
    names = [p for p in params if p not in NOT_OPTIONS]
    assert names == list(NAMES)
    for name in names:
        assert params[name].default == DEFAULTS[name], name
        assert f"{name} : " in solve.__doc__, name


def test_estimator_constructor_and_fit_follow_the_table(monkeypatch):
    params = inspect.signature(FrankWolfeSSVM.__init__).parameters
    for name in NAMES:
        assert name in params, name
        assert params[name].default == DEFAULTS[name], name
    assert set(FrankWolfeSSVM(ChainModel(3)).get_params()) >= set(NAMES)
    seen = {}

    def fake_solve(oracle, lam, **kwargs):
        seen.update(kwargs)
        raise RuntimeError("stop")

    monkeypatch.setattr("ssvm_core.solvers.solve", fake_solve)
    values = {"step": "pairwise", "sampling": "gap", "cache": True, "cache_size": 7,
              "tol": 0.5, "gap_check_every": 3, "initial_gap_pass": False, "verbose": 1}
    X, Y = random_chain_data(np.random.default_rng(0), 3, 3, 3, 2)
    with pytest.raises(RuntimeError, match="stop"):
        FrankWolfeSSVM(ChainModel(3), **values).fit(X, Y)
    assert set(seen) == set(NAMES) | {"state"}
    for name, value in values.items():
        assert seen[name] == value, name


def _train_actions():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return {a.dest: a for a in sub.choices["train"]._actions}


def test_cli_train_options_and_choices_follow_the_table():
    actions = _train_actions()
    for opt in OPTIONS:
        if not opt.cli:
            continue
        assert opt.name in actions, opt.name
        action = actions[opt.name]
        assert action.default == opt.default, opt.name
        if isinstance(opt.constraint, Choice):
            assert tuple(action.choices) == opt.constraint.values, opt.name


def test_ssvm_paths_passes_on_exactly_the_path_options():
    base = dict(step="pairwise", sampling="gap", cache=True, max_passes=10, gap_check_every=2,
                random_state=0, n_jobs=None)
    for name in PATH_NAMES:
        if name not in base:
            opts = solver_options(**base, extra={name: DEFAULTS[name]})
            assert opts[name] == DEFAULTS[name]
    for name in set(NAMES) - set(PATH_NAMES):
        with pytest.raises(ValueError, match="set by the path"):
            solver_options(**base, extra={name: DEFAULTS[name]})
    with pytest.raises(ValueError, match="step must be one of"):
        solver_options(**dict(base, step="nope"), extra={})


@pytest.mark.parametrize("name, value, message", [
    ("step", "newton", "step must be one of"),
    ("sampling", "random", "sampling must be one of"),
    ("cache_size", 1, "cache_size must be an integer >= 2"),
    ("max_passes", 0, "max_passes must be an integer >= 1"),
    ("max_passes", 2.5, "max_passes must be an integer"),
    ("tol", -1.0, "tol must be a number >= 0"),
    ("time_budget", 0.0, "time_budget must be a number > 0"),
    ("n_jobs", 0, "n_jobs must be a nonzero"),
    ("cache", "yes", "cache must be True or False"),
])
def test_bad_values_name_the_option(name, value, message):
    with pytest.raises(ValueError, match=message):
        validate({name: value})
    assert name in BY_NAME


def test_unknown_options_are_refused():
    with pytest.raises(TypeError, match="unknown solver option"):
        validate({"stepsize": 1})
