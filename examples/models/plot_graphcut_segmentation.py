"""
Segmentation with graph cuts
============================

Binary segmentation of superpixel graphs, the HorseSeg task of |Osokin2016|
(App. I.3): a superpixel is object (1) or background (0); the score of a
labelling sums a unary term per superpixel and a Potts term that penalises
cutting an edge between similar superpixels. The loss-augmented max oracle is
an exact min-cut (:class:`ssvm_oracles.GraphCutModel`, our own Cython
Boykov-Kolmogorov max-flow, no GIL) *provided* the pairwise weights are
nonnegative, so training uses the box ``model.weight_bounds()``
(``box="model"``; the default ``box="auto"`` takes it too).

The images come from :func:`ssvm_data.horseseg_like`: random planar
superpixel graphs of HorseSeg's size (147 superpixels) with an elliptic object,
histogram features that are ambiguous for some superpixels, and edge
similarity features (about 2.4 MB per image).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from ssvm_core import FrankWolfeSSVM
from ssvm_data import horseseg_like
from ssvm_oracles import GraphCutModel

X, Y = horseseg_like(40, random_state=0)
X_train, Y_train, X_test, Y_test = X[:20], Y[:20], X[20:], Y[20:]
unary, edges, pairwise = X_train[0]
print(f"image 0: {unary.shape[0]} superpixels x {unary.shape[1]} unary features, "
      f"{edges.shape[0]} edges x {pairwise.shape[1]} pairwise features, "
      f"{Y_train[0].mean():.0%} object")

# %%
# Train with and without the pairwise terms
# -----------------------------------------
# The full model keeps ``w_P >= 0`` (its box). Fixing ``w_P = 0`` with a box of
# our own gives the unary-only baseline: each superpixel on its own.
model = GraphCutModel()
full = FrankWolfeSSVM(model, lam=1.0, box="model", tol=1e-3, max_passes=60,
                      random_state=0).fit(X_train, Y_train)
lower, upper = model.weight_bounds()
upper = upper.copy()
upper[model.n_unary:] = 0.0          # w_P = 0: no pairwise term
unary_only = FrankWolfeSSVM(GraphCutModel(), lam=1.0, box=(lower, upper), tol=1e-3,
                            max_passes=60, random_state=0).fit(X_train, Y_train)

for name, svm in (("unary + pairwise", full), ("unary only", unary_only)):
    print(f"{name:>17}: gap {svm.gap_:.1e} after {svm.n_passes_} passes; "
          f"test score (1 - balanced Hamming loss) {svm.score(X_test, Y_test):.3f}")
# (Neither run has converged to a small gap in 60 passes; the test score
# settles long before.)
w_pairwise = full.w_[model.n_unary:]
print(f"pairwise weights: min {w_pairwise.min():.3f} (the box keeps them >= 0), "
      f"max {w_pairwise.max():.3f}")

# %%
# Errors per test image
# ---------------------
# The pairwise terms smooth the labelling along similar neighbours, which fixes
# superpixels whose own histogram looks like the other class.
losses = {name: [svm.model.loss(y, p) for y, p in zip(Y_test, svm.predict(X_test), strict=True)]
          for name, svm in (("unary + pairwise", full), ("unary only", unary_only))}
fig, ax = plt.subplots(figsize=(8, 3.5))
order = np.argsort(losses["unary only"])
for name, marker in (("unary only", "o"), ("unary + pairwise", "s")):
    ax.plot(np.asarray(losses[name])[order], marker, label=name)
ax.set(xlabel="test image (sorted by the unary-only loss)",
       ylabel="class-balanced Hamming loss")
ax.legend()
fig.tight_layout()
