"""
Writing a max oracle in Python
==============================

The solvers only need a *max oracle*: for block i (a training example) and
weights w, the loss-augmented decoding ``argmax_y H_i(y; w)`` with
``H_i(y; w) = L_i(y) - <w, psi_i(y)>`` and ``psi_i(y) = phi(x_i, y_i) - phi(x_i, y)``.
Any Python object with

- integer attributes ``n_blocks``, ``n_features`` and ``max_labels``,
- ``solve(i, w) -> (labels, psi, loss)``: the loss-augmented argmax,
- ``evaluate(i, labels, w) -> (psi, loss)``: a stored labelling, re-evaluated,

is an oracle (:class:`ssvm_core.PythonOracle` wraps it and checks every answer).
A :class:`ssvm_core.StructuredModel` whose ``bind(X, Y)`` returns such an object
plugs into :class:`ssvm_core.FrankWolfeSSVM`. See :doc:`/oracles/python`.

The example: multi-label classification with L independent binary labels, the
Hamming loss divided by L, and one weight vector per label. The argmax is
easy: flip label l when that raises H, i.e. when
``1/L + (1 - 2 y_il) <w_l, x_i> > 0``.
"""

# %%
# The oracle and the model
# ------------------------
import itertools
import time

import matplotlib.pyplot as plt
import numpy as np

from ssvm_core import FrankWolfeSSVM, StructuredModel, primal_objective
from ssvm_core.testing import check_oracle


class MultiLabelOracle:
    """Loss-augmented decoding of L independent binary labels, in NumPy."""

    def __init__(self, X: np.ndarray, Y: np.ndarray):
        self.X, self.Y = X, Y
        self.n_blocks = X.shape[0]
        self.n_labels = Y.shape[1]
        self.n_features = self.n_labels * X.shape[1]
        self.max_labels = self.n_labels

    def evaluate(self, i, labels, w):
        psi = np.outer(self.Y[i] - labels, self.X[i]).ravel()
        return psi, float(np.mean(labels != self.Y[i]))

    def solve(self, i, w):
        scores = w.reshape(self.n_labels, -1) @ self.X[i]
        flip = 1.0 / self.n_labels + (1 - 2 * self.Y[i]) * scores > 0
        labels = np.where(flip, 1 - self.Y[i], self.Y[i]).astype(np.int32)
        return (labels, *self.evaluate(i, labels, w))


class MultiLabelModel(StructuredModel):
    """phi(x, y) = vec(outer(y, x)), Hamming loss / L."""

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
        return MultiLabelOracle(np.asarray(X, dtype=float), np.asarray(Y, dtype=np.int32))

    def predict(self, X, w):
        return list((np.asarray(X) @ w.reshape(self.n_labels, -1).T > 0).astype(np.int32))

    def enumerate_labelings(self, x):          # for brute-force checks on tiny problems
        return [np.array(y, dtype=np.int32) for y in itertools.product((0, 1),
                                                                        repeat=self.n_labels)]


# %%
# Data: a planted linear model with noise
# ---------------------------------------
rng = np.random.default_rng(0)
n, n_inputs, n_labels = 400, 10, 5
X = rng.normal(size=(n, n_inputs))
W_true = rng.normal(size=(n_labels, n_inputs))
Y = (X @ W_true.T + rng.normal(scale=1.0, size=(n, n_labels)) > 0).astype(np.int32)
X_train, Y_train, X_test, Y_test = X[:300], Y[:300], X[300:], Y[300:]
model = MultiLabelModel(n_labels, n_inputs)

# %%
# Check the oracle before training
# --------------------------------
# :func:`ssvm_core.testing.check_oracle` compares ``solve`` with an enumeration
# of all 2^L labellings (through ``model.enumerate_labelings``) at several
# random weights, checks that ``evaluate`` reproduces every answer and that the
# ground truth has psi = 0, loss = 0 and score = 0. It raises ``AssertionError``
# naming the block, the weights and the quantity that differ.
check_oracle(model.bind(X_train[:8], Y_train[:8]), model=model, X=X_train[:8],
             Y=Y_train[:8])
print("check_oracle: the Python oracle is an exact max oracle on 8 examples")

# %%
# Train
# -----
svm = FrankWolfeSSVM(model, lam=0.01, tol=1e-2, gap_check_every=2,
                     random_state=0).fit(X_train, Y_train)
print(f"{svm.status_} after {svm.n_passes_} passes, gap {svm.gap_:.1e}; test score "
      f"(1 - Hamming loss) {svm.score(X_test, Y_test):.3f}")

oracle = model.bind(X_train, Y_train)
start = time.perf_counter()
primal_objective(oracle, 0.01, svm.w_)             # one oracle call per example
per_call = (time.perf_counter() - start) / oracle.n_blocks
print(f"{per_call * 1e6:.1f} us per oracle call (Python, the GIL held)")

# %%
# A Python oracle costs one trip through the interpreter per call and holds the
# GIL, so gap passes cannot run in threads. The same oracle in Cython runs
# without the GIL: see :ref:`sphx_glr_auto_examples_oracles_plot_cython_oracle.py`.

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
           title="BCFW with the Python oracle")
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
