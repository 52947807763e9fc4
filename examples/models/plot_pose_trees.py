"""
Pose estimation on a tree of parts
==================================

The LSP pose task of |Osokin2016| (App. I.4, after Chen and Yuille 2014): 26
body parts on a grid, linked by a tree; each arc has a *type* (how the limb is
oriented) with its own mean displacement and quadratic deformation cost. The
max oracle is exact max-sum on the tree, with messages computed by generalized
distance transforms (:class:`ssvm_oracles.PoseModel`, in C without the GIL). The
transforms need the quadratic deformation weights to be nonnegative, so training
uses the model's box (the default ``box="auto"`` would too; ``box="model"``
insists on it). The loss is the mean over parts of
``min(1, |l - l_true|^2 / rho^2)``, rho the distance between the left shoulder
and the right hip.

The poses come from :func:`ssvm_data.lsp_like`, here on a 12 x 12 grid with 6
types per arc (the paper has 13) to keep the example fast: noisy part score
maps in which decoding each part on its own is often wrong.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from ssvm_core import FrankWolfeSSVM
from ssvm_data import lsp_like
from ssvm_data.lsp import POSE_TREE_PARENTS, SCALE_PARTS
from ssvm_oracles import PoseModel

X, Y = lsp_like(25, grid=(12, 12), n_types=6, random_state=0)
X_train, Y_train, X_test, Y_test = X[:15], Y[:15], X[15:], Y[15:]
model = PoseModel(POSE_TREE_PARENTS, SCALE_PARTS)
svm = FrankWolfeSSVM(model, lam=10.0, box="model", tol=1e-3, max_passes=10,
                     gap_check_every=5, random_state=0).fit(X_train, Y_train)
print(f"{svm.status_} after {svm.n_passes_} passes, gap {svm.gap_:.2e}; "
      f"train score {svm.score(X_train, Y_train):.3f}, test score "
      f"{svm.score(X_test, Y_test):.3f} (1 - mean truncated distance loss)")

# %%
# Compare with each part's best unary score alone
# -----------------------------------------------
# Each part placed at the maximum of its own score map (the types do not enter
# the loss, so we copy the true ones):
def unary_guess(x, y_true):
    positions = [np.unravel_index(np.argmax(m), m.shape)[::-1] for m in x[0]]
    return np.concatenate([np.ravel(positions), y_true[2 * model.n_parts:]])


unary_loss = np.mean([model.loss(y, unary_guess(x, y))
                      for x, y in zip(X_test, Y_test, strict=True)])
print(f"test loss of the unary maps alone {unary_loss:.3f}, "
      f"of the trained tree model {1 - svm.score(X_test, Y_test):.3f}")

# %%
# A test pose
# -----------
# The maximum of the part score maps in the background, the true tree in blue, the
# prediction in red.
y_pred = svm.predict(X_test[:1])[0]
fig, ax = plt.subplots(figsize=(4.5, 4.5))
ax.imshow(X_test[0][0].max(axis=0), cmap="Greys")
for y, color, width, label in ((Y_test[0], "C0", 5, "true"), (y_pred, "C3", 1.5, "predicted")):
    positions, _ = model.split_labels(y)
    for child, parent in enumerate(POSE_TREE_PARENTS):
        if parent >= 0:
            ax.plot(*positions[[child, parent]].T, "-", color=color, lw=width, alpha=0.7)
    ax.plot(*positions.T, "o", color=color, ms=4, label=label)
ax.legend(loc="lower right")
ax.set_axis_off()
fig.tight_layout()
