"""The block stores (``ssvm_core._storage``): one type per storage, its Python side."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from strategies import sparse_token_chains

from ssvm_core import SolverState, solve
from ssvm_core._storage import (
    CompactStore,
    DenseStore,
    SparseStore,
    oracle_layout,
    store_from_arrays,
)
from ssvm_oracles import ChainModel

STORES = {"dense": DenseStore, "sparse": SparseStore, "compact": CompactStore}


def _trained(blocks, **kw):
    oracle = ChainModel(4, blocks=blocks).bind(*sparse_token_chains())
    return oracle, solve(oracle, 0.1, max_passes=3, random_state=0, **kw).state


@pytest.mark.parametrize("blocks", ["dense", "sparse", "compact"])
def test_each_storage_is_its_own_type_with_consistent_views(blocks):
    oracle, state = _trained(blocks)
    store = state.blocks
    assert type(store) is STORES[blocks] and store.storage == state.block_storage == blocks
    vectors = np.array([state.block_vector(i) for i in range(state.n_blocks)])
    np.testing.assert_allclose(vectors.sum(axis=0), state.v, atol=1e-12)
    np.testing.assert_allclose(store.total(oracle), state.v, atol=1e-12)
    w = np.random.default_rng(0).normal(size=state.n_features)
    np.testing.assert_allclose(state.block_inner(w), vectors @ w, rtol=1e-12, atol=1e-12)
    assert store.problems() == []
    assert store.layout_difference(oracle_layout(oracle)) is None


@pytest.mark.parametrize("blocks", ["dense", "sparse", "compact"])
def test_set_block_and_add_block_work_on_every_storage(blocks):
    # What a shard round does with a block: move its stored values, add a change of
    # them to a dense vector.
    oracle, state = _trained(blocks)
    store = state.blocks
    i = 3
    old = np.array(store.values[store.ptr[i]:store.ptr[i + 1]])
    j = int(np.argmax(old == 0.0)) if np.any(old == 0.0) else 0
    new = 0.5 * old
    new[j] = 0.7                          # a coordinate that may have been zero
    before = state.block_vector(i)
    out = np.ones(state.n_features)
    store.add_block(i, new - old, out, oracle)
    store.set_block(i, new)
    np.testing.assert_array_equal(store.values[store.ptr[i]:store.ptr[i + 1]], new)
    np.testing.assert_allclose(out - 1.0, state.block_vector(i) - before, atol=1e-12)
    assert store.problems() == []         # a compact mask covers the new nonzero
    with pytest.raises(ValueError, match="block 3 holds"):
        store.set_block(i, new[:-1])


def test_every_store_says_the_parallel_replay_covers_it():
    for blocks in ("dense", "sparse", "compact"):
        oracle, state = _trained(blocks)
        assert state.blocks.replay_problem is None
        assert all(n >= 1 for n in state.blocks.replay_slots(oracle))


@pytest.mark.parametrize("blocks", ["dense", "sparse", "compact"])
def test_stores_pickle_copy_and_round_trip_through_their_arrays(blocks):
    oracle, state = _trained(blocks, step="pairwise")
    store = state.blocks
    for other in (pickle.loads(pickle.dumps(store)), store.copy()):
        assert type(other) is type(store)
        for name in ("values", "ptr", "support", "mask", "mask_ptr"):
            np.testing.assert_array_equal(getattr(other, name), getattr(store, name))
    copy = store.copy()
    copy.scale(2.0)                                # the copy owns its values
    np.testing.assert_array_equal(copy.values, 2.0 * store.values)
    arrays = store.to_arrays()
    again = store_from_arrays(store.n_blocks, store.n_features, arrays["block_values"],
                              arrays["block_ptr"], arrays["block_support"],
                              blocks == "compact")
    assert type(again) is type(store)
    again.index(state.atoms)                       # a compact mask: values and atoms
    assert again.problems() == [] and not np.any(again.mask & ~store.mask)
    np.testing.assert_array_equal(again.values, store.values)
    assert state.copy().blocks is not store


def test_store_arrays_are_checked_before_use():
    n, d = 3, 4
    ptr = np.arange(n + 1) * d
    values = np.zeros(n * d)
    with pytest.raises(ValueError, match="block_ptr has shape"):
        store_from_arrays(n, d, values, ptr[:-1], np.zeros(0, np.int32), False)
    with pytest.raises(ValueError, match="start at 0 and increase"):
        store_from_arrays(n, d, values, ptr[::-1].copy(), np.zeros(0, np.int32), False)
    with pytest.raises(ValueError, match="block_values has 11 entries"):
        store_from_arrays(n, d, values[:-1], ptr, np.zeros(0, np.int32), True)
    with pytest.raises(ValueError, match="no block_support"):
        store_from_arrays(n, d, values, ptr, np.arange(n * d, dtype=np.int32) % d, True)
    dense = store_from_arrays(n, d + 1, values, ptr, np.zeros(0, np.int32), False)
    assert dense.problems() == ["dense blocks must have n_features entries each"]
    sparse = store_from_arrays(n, d, values, ptr, np.full(n * d, d, np.int32), False)
    assert sparse.problems() == [f"block_support has feature indices outside [0, {d})"]


def test_a_store_says_how_an_oracle_layout_differs():
    X, Y = sparse_token_chains()
    dense = SolverState.for_oracle(ChainModel(4, blocks="dense").bind(X, Y), 0.1)
    compact = SolverState.for_oracle(ChainModel(4, blocks="compact").bind(X, Y), 0.1)
    sparse_oracle = ChainModel(4, blocks="sparse").bind(X, Y)
    assert "does not offer compact" in compact.blocks.layout_difference(
        oracle_layout(sparse_oracle))
    assert "offers compact" in dense.blocks.layout_difference(
        oracle_layout(compact._compatible_oracle))
    assert "supports differ" in dense.blocks.layout_difference(oracle_layout(sparse_oracle))
    assert dense.blocks.layout_difference(oracle_layout(sparse_oracle),
                                          storage_only=True) is None
