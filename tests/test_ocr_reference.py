"""The foundation's acceptance run on real OCR-large (needs $SSVM_DATA_HOME)."""

import os
from pathlib import Path

import numpy as np
import pytest

from ssvm_core import FrankWolfeSSVM, dual_objective, duality_gap, primal_objective
from ssvm_data import load_ocr
from ssvm_oracles import ChainModel

HOME = os.environ.get("SSVM_DATA_HOME")
pytestmark = [
    pytest.mark.shared_data,
    pytest.mark.skipif(not HOME or not (Path(HOME) / "ocr").is_dir(),
                       reason="set SSVM_DATA_HOME to a folder with ocr/ (e.g. ../shared/data)"),
]


@pytest.fixture(scope="module")
def ocr_large():
    return load_ocr(split="large", download=False)


def test_bcfw_ten_passes_on_ocr_large_matches_the_reference(ocr_large):
    X, Y, X_test, Y_test = ocr_large
    assert len(X) == 6251 and len(X_test) == 626
    model = ChainModel(n_states=26)
    # the MATLAB reference reports the averaged iterate
    svm = FrankWolfeSSVM(model, lam=0.01, max_passes=10, random_state=0,
                         averaging="average").fit(X, Y)
    assert model.size_joint_feature == 4082
    # The MATLAB reference reaches 0.1435 after 10 uniform passes (averaged iterate).
    assert svm.status_ == "max_passes" and svm.n_passes_ == 10
    assert 0.0 < svm.gap_ < 0.15
    oracle = model.bind(X, Y)
    primal = primal_objective(oracle, 0.01, svm.w_)
    dual = dual_objective(svm.state_, averaged=True)
    assert np.array_equal(svm.w_, svm.state_.averaged_w())
    assert duality_gap(oracle, svm.state_, averaged=True) == pytest.approx(
        primal - dual, abs=1e-9)
    assert svm.gap_ == pytest.approx(primal - dual, abs=1e-9)
    last = svm.history_[-1]
    assert last["primal_avg"] - last["dual_avg"] == pytest.approx(last["gap_avg"], abs=1e-12)
    assert svm.score(X_test, Y_test) > 0.8
