"""
Word alignment as bipartite matching
====================================

The word-alignment task of |LacosteJulien2013| (Sec. 6, after Taskar et al.
2006): a sentence pair has source and target words and candidate links between
them, each with a feature vector; a labelling is a matching (every word linked
to at most one word on the other side, words may stay unaligned). The loss
charges 1 per predicted link that is wrong and 3 per true link missed, divided
by the source length. :class:`ssvm_oracles.MatchingModel` decodes the
loss-augmented maximum-weight matching exactly with the Hungarian method, in C
without the GIL.

The pairs come from :func:`ssvm_data.matching`: sentences of 10 to 30 words,
82 edge features, and a planted alignment.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from ssvm_core import FrankWolfeSSVM
from ssvm_data import matching
from ssvm_oracles import MatchingModel

X, Y = matching(300, random_state=0)
X_train, Y_train, X_test, Y_test = X[:200], Y[:200], X[200:], Y[200:]
n_s, n_t, edges, features = X_test[0]
print(f"test pair 0: {n_s} source and {n_t} target words, {len(edges)} candidate links "
      f"with {features.shape[1]} features each")

svm = FrankWolfeSSVM(MatchingModel(), lam=0.01, sampling="gap", tol=1e-3, max_passes=50,
                     random_state=0).fit(X_train, Y_train)
print(f"{svm.status_} after {svm.n_passes_} passes, gap {svm.gap_:.1e}; "
      f"test score {svm.score(X_test, Y_test):.3f} (1 - mean loss)")

# The loss charges missed links three times, so ``1 - loss`` is low even for
# decent alignments; precision and recall of the links are easier to read:
predicted = svm.predict(X_test)
true_links = sum(int((y >= 0).sum()) for y in Y_test)
found_links = sum(int((p >= 0).sum()) for p in predicted)
correct = sum(int(((p == y) & (y >= 0)).sum()) for p, y in zip(predicted, Y_test, strict=True))
print(f"links: precision {correct / found_links:.3f}, recall {correct / true_links:.3f}")

# %%
# One predicted alignment
# -----------------------
# Grey cells are the candidate links; circles the true alignment, crosses the
# prediction.
y_true, y_pred = Y_test[0], svm.predict(X_test[:1])[0]
grid = np.zeros((n_s, n_t))
grid[edges[:, 0], edges[:, 1]] = 1
fig, ax = plt.subplots(figsize=(6, 6 * n_s / max(n_t, 1)))
ax.imshow(grid, cmap="Greys", alpha=0.25, vmax=3)
for j in range(n_s):
    if y_true[j] >= 0:
        ax.plot(y_true[j], j, "o", mfc="none", mec="C0", ms=9)
    if y_pred[j] >= 0:
        ax.plot(y_pred[j], j, "x", color="C3", ms=7)
ax.set(xlabel="target word", ylabel="source word",
       title=f"loss {svm.model.loss(y_true, y_pred):.3f} (o: true, x: predicted)")
fig.tight_layout()
