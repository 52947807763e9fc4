"""
Writing a max oracle in Cython
==============================

A compiled oracle is a ``cdef class`` that subclasses ``ssvm_core._oracle.MaxOracle``
and implements two C methods that run without the GIL:

- ``solve(i, w, out)``: the loss-augmented argmax for block i, written into the
  ``Corner`` ``out`` (labelling, psi, loss and score ``H_i(y; w)``);
- ``evaluate(i, labels, n_labels, w, out)``: the same for a given labelling.

It compiles against the *installed* ssvm-core, whose wheel ships the protocol
(``ssvm_core/_oracle.pxd``, ``ssvm_core/_typedefs.pxd``). This example builds
``multilabel_oracle.pyx`` (next to this script; it is listed in full in
:doc:`/oracles/cython`) into a temporary folder with ``Cython.Build.cythonize``
and setuptools, checks it with :func:`ssvm_core.testing.check_oracle` and trains
with it. The oracle is the multi-label one of
:ref:`sphx_glr_auto_examples_oracles_plot_python_oracle.py`.
"""

# %%
# Compile against the installed ssvm-core
# ---------------------------------------
# The include path is the folder that holds the ``ssvm_core`` package, so that
# ``from ssvm_core._oracle cimport MaxOracle`` finds the ``.pxd`` files. The
# oracle cimports no NumPy headers, so no NumPy include is needed. (Cython also
# searches ``sys.path`` for ``.pxd`` files, so the include path is a safeguard.)
import importlib
import itertools
import shutil
import sys
import tempfile
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from Cython.Build import cythonize
from setuptools import Extension
from setuptools.dist import Distribution

import ssvm_core
from ssvm_core import FrankWolfeSSVM, StructuredModel, primal_objective
from ssvm_core.testing import check_oracle

here = Path(__file__).parent if "__file__" in globals() else Path.cwd()
build_dir = Path(tempfile.mkdtemp(prefix="ssvm-oracle-"))
source = shutil.copy(here / "multilabel_oracle.pyx", build_dir)
include = str(Path(ssvm_core.__file__).parent.parent)

extension = Extension("multilabel_oracle", [str(source)], extra_compile_args=["-O1"])
# (-O1 keeps the compile short here; build a production oracle with -O2 or -O3)
# the compiler directives are in the .pyx file's first line
modules = cythonize([extension], include_path=[include], quiet=True)
dist = Distribution({"name": "multilabel-oracle", "ext_modules": modules})
build = dist.get_command_obj("build_ext")
build.build_lib, build.build_temp = str(build_dir), str(build_dir / "tmp")
start = time.perf_counter()
dist.run_command("build_ext")
print(f"compiled in {time.perf_counter() - start:.1f} s into {build_dir}")

sys.path.insert(0, str(build_dir))
MultiLabelOracle = importlib.import_module("multilabel_oracle").MultiLabelOracle

# %%
# A model around the compiled oracle
# ----------------------------------
# ``bind`` returns the compiled oracle; ``joint_feature``, ``loss`` and
# ``enumerate_labelings`` serve the brute-force check, ``predict`` the estimator.


class MultiLabelModel(StructuredModel):
    """phi(x, y) = vec(outer(y, x)), Hamming loss / L, with the Cython oracle."""

    def __init__(self, n_labels: int, n_inputs: int):
        self.n_labels, self.n_inputs = n_labels, n_inputs

    @property
    def size_joint_feature(self) -> int:
        return self.n_labels * self.n_inputs

    def joint_feature(self, x, y):
        return np.outer(y, x).ravel()

    def loss(self, y_true, y_pred) -> float:
        return float(np.mean(np.asarray(y_true) != np.asarray(y_pred)))

    def bind(self, X, Y):
        return MultiLabelOracle(X, Y)

    def predict(self, X, w):
        return list((np.asarray(X) @ w.reshape(self.n_labels, -1).T > 0).astype(np.int32))

    def enumerate_labelings(self, x):
        return [np.array(y, dtype=np.int32) for y in itertools.product((0, 1),
                                                                        repeat=self.n_labels)]


rng = np.random.default_rng(0)
n, n_inputs, n_labels = 400, 10, 5
X = rng.normal(size=(n, n_inputs))
W_true = rng.normal(size=(n_labels, n_inputs))
Y = (X @ W_true.T + rng.normal(scale=1.0, size=(n, n_labels)) > 0).astype(np.int32)
X_train, Y_train, X_test, Y_test = X[:300], Y[:300], X[300:], Y[300:]
model = MultiLabelModel(n_labels, n_inputs)

# %%
# Check it, then train
# --------------------
# ``check_oracle`` calls the C methods through their Python twins
# (``solve_py``, ``evaluate_py``) and compares them with the enumeration of all
# 2^L labellings. Bad input is refused with a ``ValueError``, never a crash.
oracle = model.bind(X_train, Y_train)
check_oracle(model.bind(X_train[:8], Y_train[:8]), model=model, X=X_train[:8],
             Y=Y_train[:8])
print(f"check_oracle passed; needs_gil = {oracle.needs_gil}")
try:
    oracle.evaluate_py(0, np.array([0, 1, 2, 0, 0]), np.zeros(oracle.n_features))
except ValueError as error:
    print("evaluate_py refuses a bad labelling:", error)

svm = FrankWolfeSSVM(model, lam=0.01, tol=1e-2, gap_check_every=2,
                     random_state=0).fit(X_train, Y_train)
print(f"{svm.status_} after {svm.n_passes_} passes, gap {svm.gap_:.1e}; test score "
      f"(1 - Hamming loss) {svm.score(X_test, Y_test):.3f}")

start = time.perf_counter()
primal_objective(oracle, 0.01, svm.w_)
per_call = (time.perf_counter() - start) / oracle.n_blocks
print(f"{per_call * 1e6:.2f} us per oracle call (Cython, no GIL)")

# %%
# To ship such an oracle in a package, list ``ssvm-core`` (same minor version)
# in ``build-system.requires`` and in the dependencies, build with
# ``pip install --no-build-isolation`` against the installed ssvm-core, as
# ssvm-oracles does; see :doc:`/oracles/cython`.

# %%
# The run and its result
# ----------------------
# Left: the exact duality gap of both iterates at each gap check (every 2
# passes here), which bounds how far the returned weights are from the optimum,
# down to ``tol``. Right: the test accuracy of each label against that of the
# planted model that generated the labels (its noise caps it).
checks = [h for h in svm.history_ if h["gap"] is not None]
fig, (ax_gap, ax_acc) = plt.subplots(1, 2, figsize=(9, 3.4))
ax_gap.semilogy([h["pass"] for h in checks], [h["gap"] for h in checks], "o-",
                label="last iterate")
ax_gap.semilogy([h["pass"] for h in checks], [h["gap_avg"] for h in checks], "s--",
                label="weighted average")
ax_gap.axhline(svm.tol, color="gray", lw=1, ls=":", label="tol")
ax_gap.set(xlabel="passes", ylabel="exact duality gap",
           title="BCFW with the Cython oracle")
ax_gap.legend()
predicted = np.array(svm.predict(X_test))
planted = (X_test @ W_true.T > 0).astype(np.int32)
labels = np.arange(n_labels)
ax_acc.bar(labels - 0.2, (predicted == Y_test).mean(axis=0), width=0.4, label="trained")
ax_acc.bar(labels + 0.2, (planted == Y_test).mean(axis=0), width=0.4, label="planted model")
ax_acc.set(xlabel="label", ylabel="test accuracy", ylim=(0.5, 1), xticks=labels,
           title="Per-label test accuracy")
ax_acc.legend(loc="lower right")
fig.tight_layout()
plt.show()
