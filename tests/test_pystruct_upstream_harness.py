"""The harness that runs pystruct's own tests (tests/pystruct_upstream.py), without network."""

import sys
import unittest

import numpy as np
import pystruct_upstream
import pytest


def test_rewrite_changes_only_the_import_prefix():
    source = ("from pystruct.models import GraphCRF\n"
              "from pystruct import learners\n"
              "import pystruct.learners as ssvm\n"
              "import pystruct\n"
              "x = pystruct.utils.make_grid_edges\n"
              'print("Score with pystruct n-slack ssvm")\n'
              "mypystruct.models = 1\n")
    assert pystruct_upstream.rewrite_source(source) == (
        "from ssvm.compat.pystruct.models import GraphCRF\n"
        "from ssvm.compat.pystruct import learners\n"
        "import ssvm.compat.pystruct.learners as ssvm\n"
        "import ssvm.compat.pystruct\n"
        "x = ssvm.compat.pystruct.utils.make_grid_edges\n"
        'print("Score with pystruct n-slack ssvm")\n'
        "mypystruct.models = 1\n")


def test_shims_exist_only_inside_the_block():
    assert "int" not in np.__dict__ and "nose" not in sys.modules
    with pystruct_upstream.legacy_shims():
        assert np.__dict__["int"] is int and np.__dict__["float"] is float
        from nose import SkipTest
        from nose.tools import assert_almost_equal, assert_equal, assert_raises, assert_true
        assert SkipTest is unittest.SkipTest
        assert_equal(1, 1)
        assert_true(True)
        assert_almost_equal(1.0, 1.0 + 1e-9)
        with assert_raises(ZeroDivisionError):
            _ = 1 / 0
        with pytest.raises(AssertionError):
            assert_equal(1, 2)
    assert "int" not in np.__dict__
    assert "nose" not in sys.modules and "nose.tools" not in sys.modules


def test_seeded_global_random_restores_the_state():
    before = np.random.get_state()[1].copy()  # noqa: NPY002
    with pystruct_upstream.seeded_global_random(0):
        first = np.random.normal()  # noqa: NPY002
    with pystruct_upstream.seeded_global_random(0):
        assert np.random.normal() == first  # noqa: NPY002
    np.testing.assert_array_equal(np.random.get_state()[1], before)  # noqa: NPY002


def test_offline_without_cache_is_unavailable_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setenv(pystruct_upstream.CACHE_ENV, str(tmp_path))
    monkeypatch.setenv("SSVM_PYSTRUCT_OFFLINE", "1")
    with pytest.raises(pystruct_upstream.Unavailable, match=r"\$SSVM_PYSTRUCT_OFFLINE is set"):
        pystruct_upstream.sdist_root()
    assert list(tmp_path.iterdir()) == []


def test_collect_lists_module_level_tests_in_order(tmp_path):
    folder = tmp_path / "pystruct" / "tests" / "test_x"
    folder.mkdir(parents=True)
    (folder / "test_a.py").write_text("def helper():\n    pass\n\n\ndef test_b():\n    pass\n\n\n"
                                      "def test_a():\n    def test_inner():\n        pass\n")
    (folder / "test_skip.py").write_text("def test_c():\n    pass\n")
    assert pystruct_upstream.collect(tmp_path, ["test_x"], exclude=["test_x/test_skip.py"]) == [
        "test_x/test_a.py::test_b", "test_x/test_a.py::test_a"]
