"""Binding a ``SolverState`` to the oracle it continues on: the fingerprint and
block-layout checks of ``check_compatible`` and ``rebind``."""

from __future__ import annotations

import warnings

from ssvm_core._oracle import MaxOracle, PythonOracle
from ssvm_core._storage import oracle_layout
from ssvm_core.fingerprint import describe_difference, oracle_fingerprint
from ssvm_core.oracles import as_oracle
from ssvm_core.state_checks import check_block_sum


def check_compatible(state, oracle: MaxOracle) -> None:
    """Raise ``ValueError`` if ``state`` cannot continue on ``oracle``; else bind it
    (see ``SolverState.check_compatible``)."""
    oracle = as_oracle(oracle)
    if _same_oracle(oracle, state._compatible_oracle):
        return
    _check_shapes(state, oracle, "warm start")
    layout = oracle_layout(oracle)
    why = state.blocks.layout_difference(layout, storage_only=True)
    if why is not None:
        raise ValueError(why)
    saved = state.fingerprint
    current = oracle_fingerprint(oracle)
    why = None if saved is None else describe_difference(saved, current)
    if why is not None:           # says what differs (model, data): before the layout
        raise ValueError(f"this state cannot continue on this oracle: {why}")
    why = state.blocks.layout_difference(layout)
    if why is not None:
        raise ValueError(why)
    if saved is not None:
        if saved.get("data") is None or current.get("data") is None:
            warnings.warn(f"{current['type']} cannot be fingerprinted (it does not "
                          "pickle): the state is continued on it after checking only "
                          "its type and shapes", RuntimeWarning, stacklevel=4)
    state._compatible_oracle = oracle
    state._fingerprint = current
    if state.blocks.needs_basis:
        try:
            check_block_sum(state, 1e-9)
        except ValueError:
            state._compatible_oracle = None
            raise


def rebind(state, oracle: MaxOracle) -> None:
    """Bind ``state`` to ``oracle`` checking only shapes and block layout (see
    ``SolverState.rebind``)."""
    oracle = as_oracle(oracle)
    _check_shapes(state, oracle, "rebinding")
    if state.blocks.layout_difference(oracle_layout(oracle)) is not None:
        raise ValueError("the oracle's block layout differs from the state's: rebinding "
                         "needs the same data")
    state._compatible_oracle = oracle
    state._fingerprint = None
    state.restart(state.lam)


def _check_shapes(state, oracle: MaxOracle, what: str) -> None:
    if (oracle.n_blocks, oracle.n_features) != (state.n_blocks, state.n_features):
        raise ValueError(
            f"state has {state.n_blocks} blocks x {state.n_features} features, the oracle "
            f"{oracle.n_blocks} x {oracle.n_features}: {what} needs the same data")


def _same_oracle(a, b) -> bool:
    """The same oracle object, or two Python-oracle adapters of the same object."""
    if a is b:
        return True
    return (isinstance(a, PythonOracle) and isinstance(b, PythonOracle) and a.obj is b.obj)
