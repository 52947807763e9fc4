"""
OCR letter sequences with a chain CRF
=====================================

Handwritten words, pre-segmented into letters (16 x 8 binary images, Taskar
et al.'s OCR data), labelled with a linear-chain CRF (``ChainCRF``) trained by
block-coordinate Frank-Wolfe, and compared with a linear SVM that labels each
letter on its own.  The chain model can use the letter transitions, which
are strongly structured in this data (the same words occur in training and
test folds).

The words come from ``ssvm_data`` (``$SSVM_DATA_HOME``); without the data
file the script falls back to ``ssvm_data.ocr_like``, synthetic words with the
same shapes.  We train on the fold that ``load_letters`` marks 0 (626 words)
and test on the others.  The first figure shows four test words with the
true letters (green), the SVM's (blue) and the CRF's (red); the second the
learned transition weights.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.svm import LinearSVC

from ssvm.compat.pystruct.datasets import load_letters
from ssvm.compat.pystruct.learners import FrankWolfeSSVM
from ssvm.compat.pystruct.models import ChainCRF

abc = "abcdefghijklmnopqrstuvwxyz"

try:
    letters = load_letters(download=False)
    X, y, folds = letters["data"], letters["labels"], letters["folds"]
except FileNotFoundError:                       # no OCR file here: synthetic words
    from ssvm_data import ocr_like

    X, y = ocr_like(1000, random_state=0)
    folds = (np.arange(len(X)) >= 300).astype(int)
# object arrays make slicing by fold convenient
X, y = np.array(X, dtype=object), np.array(y, dtype=object)
X_train, X_test = X[folds == 0], X[folds != 0]
y_train, y_test = y[folds == 0], y[folds != 0]

# a linear SVM on the letters, one at a time
svm = LinearSVC(dual=False, C=0.1)
svm.fit(np.vstack(X_train), np.hstack(y_train))

# a linear-chain CRF on the words
model = ChainCRF()
ssvm = FrankWolfeSSVM(model=model, C=0.1, max_iter=11)
ssvm.fit(X_train, y_train)

print(f"Test score with chain CRF: {ssvm.score(X_test, y_test):f}")
print(f"Test score with linear SVM: {svm.score(np.vstack(X_test), np.hstack(y_test)):f}")

# four test words
n_words = 4
rnd = np.random.RandomState(1)
selected = rnd.randint(len(y_test), size=n_words)
max_word_len = max(len(y_) for y_ in y_test[selected])
fig, axes = plt.subplots(n_words, max_word_len, figsize=(10, 10))
fig.subplots_adjust(wspace=0)
for ind, axes_row in zip(selected, axes):
    y_pred_svm = svm.predict(X_test[ind])
    y_pred_chain = ssvm.predict([X_test[ind]])[0]
    for i, (a, image, y_true, y_svm, y_chain) in enumerate(  # noqa: B007  (used after the loop)
            zip(axes_row, X_test[ind], y_test[ind], y_pred_svm, y_pred_chain)):
        a.matshow(image.reshape(16, 8), cmap=plt.cm.Greys)
        a.text(0, 3, abc[y_true], color="#00AA00", size=25)
        a.text(0, 14, abc[y_svm], color="#5555FF", size=25)
        a.text(5, 14, abc[y_chain], color="#FF5555", size=25)
        a.set_xticks(())
        a.set_yticks(())
    for ii in range(i + 1, max_word_len):
        axes_row[ii].set_visible(False)

# the transition weights: row = letter, column = next letter
plt.matshow(ssvm.w[26 * 8 * 16:].reshape(26, 26))
plt.colorbar()
plt.title("Transition parameters of the chain CRF.")
plt.xticks(np.arange(26), abc)
plt.yticks(np.arange(26), abc)
plt.show()
