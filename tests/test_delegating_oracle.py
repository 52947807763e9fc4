"""``DelegatingOracle``: the one delegating base of oracle wrappers, and a wrapper of one's own.

The docs' example wrapper (``examples/oracles/violation_monitor.pyx``, a ``cdef``
subclass of ``ssvm_core.DelegatingOracle`` overriding ``solve`` and ``solve_many``) is
compiled here against the installed ssvm-core, as a user would; wrapped around a
compact chain oracle it must pass ``check_oracle`` (compact identities included) and
train exactly as the bare oracle, on compact blocks, over the solver variants.
"""

import importlib
import pickle
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from strategies import DelegatingOracle as PythonDelegate

import ssvm_core
from ssvm_core import BruteForceOracle, DelegatingOracle, MaxOracle, PythonOracle, solve
from ssvm_core._batch import AnswerOracle, solve_blocks
from ssvm_core.testing import check_gaps, check_oracle
from ssvm_core.testing.toy import random_chain_data
from ssvm_oracles import ApproximateOracle, ChainModel, CountingOracle

EXAMPLE = Path(__file__).parent.parent / "examples" / "oracles" / "violation_monitor.pyx"
N_STATES = 3


@pytest.fixture(scope="module")
def monitor_module(tmp_path_factory):
    """The example wrapper, compiled into a temporary folder."""
    Cython = pytest.importorskip("Cython.Build")
    from setuptools import Extension
    from setuptools.dist import Distribution

    build_dir = tmp_path_factory.mktemp("violation-monitor")
    shutil.copy(EXAMPLE, build_dir / EXAMPLE.name)
    include = str(Path(ssvm_core.__file__).parent.parent)
    extension = Extension("violation_monitor", [str(build_dir / EXAMPLE.name)],
                          extra_compile_args=["-O0"])
    modules = Cython.cythonize([extension], include_path=[include], quiet=True)
    dist = Distribution({"name": "violation-monitor", "ext_modules": modules})
    build = dist.get_command_obj("build_ext")
    build.build_lib, build.build_temp = str(build_dir), str(build_dir / "tmp")
    dist.run_command("build_ext")
    sys.path.insert(0, str(build_dir))
    try:
        yield importlib.import_module("violation_monitor")
    finally:
        sys.path.remove(str(build_dir))


def _data(seed=0, n=8):
    return random_chain_data(np.random.default_rng(seed), n, 5, N_STATES, 4)


def _chain(X, Y, blocks="compact"):
    return ChainModel(N_STATES, blocks=blocks).bind(X, Y)


def _brute(X, Y):
    """A Python oracle of the same chains (enumeration)."""
    return BruteForceOracle(ChainModel(N_STATES, n_features=4), X, Y)


def test_the_wrappers_share_the_base():
    X, Y = _data()
    oracle = _chain(X, Y)
    answers = solve_blocks(oracle, np.zeros(oracle.n_features), [0, 2])
    for wrapper in (DelegatingOracle(oracle), CountingOracle(oracle),
                    ApproximateOracle(oracle, 0.5), AnswerOracle(oracle, answers)):
        assert isinstance(wrapper, DelegatingOracle) and wrapper.oracle is oracle
        sizes = [(w.n_blocks, w.n_features, w.max_labels, w.max_psi_nnz, w.dense_psi,
                  w.needs_gil, w.max_coords, w.max_coord_nnz, w.max_expand)
                 for w in (wrapper, oracle)]
        assert sizes[0] == sizes[1]
        np.testing.assert_array_equal(wrapper.coord_sizes(), oracle.coord_sizes())


def test_the_example_wrapper_passes_check_oracle_with_its_compact_identities(monitor_module):
    X, Y = _data(n=5)
    oracle = _chain(X, Y)
    monitor = monitor_module.ViolationMonitor(oracle)
    assert monitor.compact_blocks and monitor.max_coords == oracle.max_coords
    check_oracle(monitor, model=ChainModel(N_STATES, n_features=4), X=X, Y=Y)
    # the same answers as the bare oracle, compact buffers included
    rng = np.random.default_rng(1)
    for i in range(oracle.n_blocks):
        w = rng.normal(size=oracle.n_features)
        ours, bare = monitor.solve_coords_py(i, w), oracle.solve_coords_py(i, w)
        for a, b in zip(ours, bare):
            np.testing.assert_array_equal(a, b)
        assert monitor.last_scores[i] == bare[-1]
        e = np.where(rng.random(bare[2].size) < 0.5, rng.normal(size=bare[2].size), 0.0)
        np.testing.assert_array_equal(monitor.coord_expand_py(i, e), oracle.coord_expand_py(i, e))
        assert monitor.coord_sqnorm_py(i, e) == oracle.coord_sqnorm_py(i, e)
        assert monitor.coord_dot_py(i, e, w) == oracle.coord_dot_py(i, e, w)


VARIANTS = [dict(), dict(step="away", n_samples=3), dict(step="pairwise", cache=True),
            dict(box=(-0.05, 0.05)), dict(sampling="gap"), dict(batch_blocks=3)]


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: ",".join(map(str, kw.items())) or "bcfw")
def test_the_example_wrapper_trains_as_the_bare_oracle_on_compact_blocks(monitor_module, kw):
    X, Y = _data()
    monitor = monitor_module.ViolationMonitor(_chain(X, Y))
    bare = solve(_chain(X, Y), 0.1, max_passes=6, gap_check_every=3, tol=0, random_state=0, **kw)
    run = solve(monitor, 0.1, max_passes=6, gap_check_every=3, tol=0, random_state=0, **kw)
    assert run.state.block_storage == bare.state.block_storage == "compact"
    np.testing.assert_allclose(run.w, bare.w, rtol=1e-12, atol=1e-14)
    assert run.gap == pytest.approx(bare.gap, rel=1e-10, abs=1e-14)
    gaps = check_gaps(_chain(X, Y, "dense"), run.state)      # independent of the basis
    if run.state.exact_gaps:
        np.testing.assert_allclose(run.state.certified_gaps, gaps, rtol=1e-8, atol=1e-12)
    # every block was solved, and an exact max scores at least the ground truth's 0
    assert np.all(monitor.last_scores >= -1e-12)
    more = solve(monitor, 0.1, state=run.state, max_passes=2, tol=0, random_state=0, **kw)
    assert more.state.block_storage == "compact"


def test_the_example_wrapper_pickles_and_wraps_python_oracles(monitor_module):
    X, Y = _data()
    monitor = monitor_module.ViolationMonitor(_chain(X, Y))
    clone = pickle.loads(pickle.dumps(monitor))
    assert type(clone) is type(monitor) and clone.coord_sizes().tolist() == \
        monitor.coord_sizes().tolist()
    assert np.all(np.isnan(clone.last_scores))
    python_level = monitor_module.ViolationMonitor(_brute(X, Y))
    assert isinstance(python_level.oracle, PythonOracle) and python_level.needs_gil
    assert not python_level.compact_blocks
    w = np.random.default_rng(2).normal(size=python_level.n_features)
    _, _, _, score = python_level.solve_py(3, w)
    assert python_level.last_scores[3] == score


class _Declared(PythonDelegate):
    """A Python oracle with a box of its own and a shard method."""

    def weight_bounds(self):
        return np.zeros(self.n_features), np.full(self.n_features, np.inf)

    def take_blocks(self, indices):
        raise AssertionError("a wrapper must not hand out its inner oracle's shard")


def test_the_base_forwards_other_attributes_but_not_shards():
    X, Y = _data()
    wrapped = DelegatingOracle(_Declared(_brute(X, Y)))
    lower, upper = wrapped.weight_bounds()
    assert np.all(lower == 0) and np.all(np.isinf(upper))
    with pytest.raises(AttributeError):
        wrapped.take_blocks  # noqa: B018
    with pytest.raises(AttributeError):
        wrapped.no_such_attribute  # noqa: B018
    assert DelegatingOracle(_chain(X, Y)).exact
    assert not ApproximateOracle(_chain(X, Y), 0.5).exact
    assert isinstance(DelegatingOracle(_chain(X, Y)), MaxOracle)


class _Forgetful(DelegatingOracle):
    """A wrapper whose constructor forgets ``super().__init__(oracle)``."""

    def __init__(self, oracle, factor):
        self.factor = factor


def test_a_wrapper_that_skipped_the_base_constructor_is_named():
    X, Y = _data()
    forgetful = _Forgetful(_chain(X, Y), 2.0)
    with pytest.raises(TypeError, match=r"_Forgetful wraps no oracle.*super\(\)\.__init__"):
        solve(forgetful, lam=0.1, max_passes=1)
    with pytest.raises(TypeError, match="_Forgetful wraps no oracle"):
        check_oracle(forgetful)
