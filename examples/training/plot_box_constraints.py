"""
Box constraints on the weights
==============================

``box=(lower, upper)`` trains under ``lower <= w <= upper`` (|Osokin2016|,
App. H): the solver keeps ``v = A alpha`` and uses ``w = clip(v, lower, upper)``,
and its duality gap certifies the *constrained* problem. Scalars broadcast and
infinite bounds are allowed. Some oracles need a box to be exact: graph cuts
need nonnegative pairwise weights, pose trees nonnegative quadratic deformation
weights; their models provide it as ``model.weight_bounds()``, and the
solvers' default ``box="auto"`` uses it (``box="model"`` insists on it; see the
graph-cut and pose examples).

Here we train a multiclass SVM on Gaussian blobs three times: unconstrained,
with nonnegative weights, and with every weight in ``[-0.5, 0.5]``.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from ssvm_core import FrankWolfeSSVM, primal_objective
from ssvm_data import multiclass
from ssvm_oracles import MulticlassModel

X, y = multiclass(400, n_classes=4, n_features=6, random_state=0)
X_train, y_train, X_test, y_test = X[:300], y[:300], X[300:], y[300:]
oracle = MulticlassModel(4).bind(X_train, y_train)

boxes = {"unconstrained": None, "w >= 0": (0.0, np.inf), "|w| <= 0.5": (-0.5, 0.5)}
fits = {}
for name, box in boxes.items():
    svm = FrankWolfeSSVM(MulticlassModel(4), lam=0.01, box=box, tol=1e-3, max_passes=300,
                         random_state=0).fit(X_train, y_train)
    fits[name] = svm
    primal = primal_objective(oracle, svm.lam_, svm.w_)
    print(f"{name:>14}: w in [{svm.w_.min():+.3f}, {svm.w_.max():+.3f}], primal {primal:.4f}, "
          f"certified gap {svm.gap_:.1e} ({svm.status_}), "
          f"test accuracy {svm.score(X_test, y_test):.3f}")

# %%
# The constrained optima can only be worse than the unconstrained one (a smaller
# feasible set), and each run's gap certifies its own problem: primal minus the
# dual of the *boxed* problem.
fig, ax = plt.subplots(figsize=(8, 3.5))
width = 0.27
for k, (name, svm) in enumerate(fits.items()):
    ax.bar(np.arange(svm.w_.size) + (k - 1) * width, svm.w_, width, label=name)
ax.axhline(0.5, color="gray", lw=0.8, ls=":")
ax.axhline(-0.5, color="gray", lw=0.8, ls=":")
ax.set(xlabel="weight index (class-major)", ylabel="w")
ax.legend(fontsize=8)
fig.tight_layout()
