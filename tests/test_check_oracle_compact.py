"""``check_oracle`` names each broken identity of a compact block basis.

The gallery's compiled multi-label oracle (``examples/oracles/multilabel_oracle.pyx``,
compact blocks of L coordinates) is compiled here together with a subclass that
breaks one identity of its basis, chosen at construction; ``check_oracle`` must pass
the faithful oracle and reject each broken one with the identity in the message.
"""

import importlib
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import ssvm_core
from ssvm_core import solve
from ssvm_core.testing import check_oracle

EXAMPLE = Path(__file__).parent.parent / "examples" / "oracles" / "multilabel_oracle.pyx"

FAULTS = '''


cdef class ExpandOnlyOracle(MultiLabelOracle):
    """MultiLabelOracle with the protocol's defaults of coord_sqnorm and coord_add
    (written through coord_expand) instead of its own fast versions (it has no
    coord_dot of its own: that default is always in use)."""

    def __reduce__(self):
        return (ExpandOnlyOracle, (np.asarray(self.X), np.asarray(self.Y)))

    cdef float64_t coord_sqnorm(self, intp_t i, const int32_t* idx, const float64_t* val,
                                intp_t nnz) except? -1 nogil:
        return MaxOracle.coord_sqnorm(self, i, idx, val, nnz)

    cdef int coord_add(self, intp_t i, const int32_t* idx, const float64_t* val, intp_t nnz,
                       float64_t* out, float64_t* out2, float64_t c2) except -1 nogil:
        return MaxOracle.coord_add(self, i, idx, val, nnz, out, out2, c2)

cdef class FaultyOracle(MultiLabelOracle):
    """MultiLabelOracle with one identity of its basis broken (``fault``)."""
    cdef public str fault

    def __init__(self, X, Y, fault):
        super().__init__(X, Y)
        self.fault = fault

    def __reduce__(self):
        return (FaultyOracle, (np.asarray(self.X), np.asarray(self.Y), self.fault))

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        MultiLabelOracle.solve(self, i, w, out)
        with gil:
            fault = self.fault
        if fault == "coords_only" and out.coord_idx != NULL and out.coords_only:
            if out.coord_nnz > 0:
                out.coord_val[0] = -out.coord_val[0]
        return 0

    cdef int evaluate(self, intp_t i, const int32_t* labels, intp_t n_labels,
                      const float64_t* w, Corner* out) except -1 nogil:
        MultiLabelOracle.evaluate(self, i, labels, n_labels, w, out)
        with gil:
            fault = self.fault
        if fault == "truth" and out.coord_idx != NULL and out.coord_nnz == 0:
            out.coord_idx[0] = 0
            out.coord_val[0] = 1e-3
            out.coord_nnz = 1
        return 0

    cdef int coord_scores(self, intp_t i, const float64_t* w,
                          float64_t* theta) except -1 nogil:
        MultiLabelOracle.coord_scores(self, i, w, theta)
        with gil:
            if self.fault == "scores":
                theta[0] += 0.25
        return 0

    cdef float64_t coord_sqnorm(self, intp_t i, const int32_t* idx, const float64_t* val,
                                intp_t nnz) except? -1 nogil:
        cdef float64_t value = MultiLabelOracle.coord_sqnorm(self, i, idx, val, nnz)
        with gil:
            if self.fault == "sqnorm":
                value *= 1.1
        return value

    cdef intp_t coord_expand(self, intp_t i, const int32_t* idx, const float64_t* val,
                             intp_t nnz, int32_t* out_idx, float64_t* out_val) except -1 nogil:
        cdef intp_t m = MultiLabelOracle.coord_expand(self, i, idx, val, nnz, out_idx,
                                                      out_val)
        with gil:
            if self.fault == "expand" and m > 0:
                out_val[0] *= 1.1
        return m

    cdef int coord_add(self, intp_t i, const int32_t* idx, const float64_t* val, intp_t nnz,
                       float64_t* out, float64_t* out2, float64_t c2) except -1 nogil:
        with gil:
            fault = self.fault
        if fault == "add":
            MultiLabelOracle.coord_add(self, i, idx, val, nnz, out, NULL, c2)
            MultiLabelOracle.coord_add(self, i, idx, val, nnz, out, out2, c2)
        elif fault == "add2":
            MultiLabelOracle.coord_add(self, i, idx, val, nnz, out, out2, 2.0 * c2)
        else:
            MultiLabelOracle.coord_add(self, i, idx, val, nnz, out, out2, c2)
        return 0

    cdef float64_t coord_dot(self, intp_t i, const int32_t* idx, const float64_t* val,
                             intp_t nnz, const float64_t* w, int32_t* work_idx,
                             float64_t* work_val) except? -1 nogil:
        cdef float64_t value = MultiLabelOracle.coord_dot(self, i, idx, val, nnz, w,
                                                          work_idx, work_val)
        with gil:
            if self.fault == "dot":
                value += 0.5
        return value
'''

# fault -> the identity check_oracle must name
IDENTITIES = {
    "expand": r"identity A_i q_i\(y\) = psi_i\(y\)",
    "scores": r"identity theta = A_i\^T w",
    "sqnorm": r"identity coord_sqnorm\(e\) = \|\|A_i e\|\|\^2",
    "add": r"identity coord_add: out \+= A_i e",
    "add2": r"identity coord_add: out2 \+= c2 A_i e",
    "dot": r"identity coord_dot\(e, w\) = <A_i e, w>",
    "coords_only": r"coords_only: coordinates differ",
    "truth": r"identity q_i\(y_i\) = 0",
}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """The gallery oracle and its faulty subclass, compiled into a temporary folder."""
    Cython = pytest.importorskip("Cython.Build")
    from setuptools import Extension
    from setuptools.dist import Distribution

    build_dir = tmp_path_factory.mktemp("faulty-oracle")
    source = build_dir / "faulty_multilabel.pyx"
    shutil.copy(EXAMPLE, source)
    with open(source, "a") as f:
        f.write(FAULTS)
    include = str(Path(ssvm_core.__file__).parent.parent)
    extension = Extension("faulty_multilabel", [str(source)], extra_compile_args=["-O0"])
    modules = Cython.cythonize([extension], include_path=[include], quiet=True)
    dist = Distribution({"name": "faulty-multilabel", "ext_modules": modules})
    build = dist.get_command_obj("build_ext")
    build.build_lib, build.build_temp = str(build_dir), str(build_dir / "tmp")
    dist.run_command("build_ext")
    sys.path.insert(0, str(build_dir))
    try:
        yield importlib.import_module("faulty_multilabel")
    finally:
        sys.path.remove(str(build_dir))


def _data(n=6, n_inputs=4, n_labels=3):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, n_inputs))
    Y = (rng.random((n, n_labels)) < 0.5).astype(np.int32)
    return X, Y


def test_the_gallery_oracle_is_compact_and_passes(compiled):
    X, Y = _data()
    oracle = compiled.MultiLabelOracle(X, Y)
    assert oracle.compact_blocks and oracle.coord_sizes().tolist() == [3] * 6
    check_oracle(oracle, Y=list(Y))
    check_oracle(compiled.FaultyOracle(X, Y, "none"), Y=list(Y))
    dense = compiled.MultiLabelOracle(X, Y, False)
    runs = [solve(o, 0.1, max_passes=5, random_state=0) for o in (dense, oracle)]
    assert runs[1].state.block_storage == "compact"
    np.testing.assert_allclose(runs[1].w, runs[0].w, rtol=1e-9, atol=1e-12)


def test_the_protocol_defaults_are_right(compiled):
    """An oracle that implements only block_coords, coord_scores and coord_expand
    (the defaults do the rest) passes check_oracle and trains like the full one."""
    X, Y = _data(n=8, n_inputs=40)           # A_i e of many entries: the heap sort
    lean = compiled.ExpandOnlyOracle(X, Y)
    check_oracle(lean, Y=list(Y))
    runs = [solve(o, 0.1, max_passes=5, random_state=0, cache=cache)
            for o in (compiled.MultiLabelOracle(X, Y), lean) for cache in (False, True)]
    np.testing.assert_allclose(runs[2].w, runs[0].w, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(runs[3].w, runs[1].w, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("fault", list(IDENTITIES))
def test_check_oracle_names_the_broken_identity(compiled, fault):
    X, Y = _data()
    with pytest.raises(AssertionError, match=IDENTITIES[fault]):
        check_oracle(compiled.FaultyOracle(X, Y, fault), Y=list(Y))
