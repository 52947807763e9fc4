"""Errors of the ssvm_oracles models (kept apart so that compiled oracles raise them
without importing the model modules that import the oracles)."""

from __future__ import annotations


class NonSubmodularError(ValueError):
    """The pairwise weights are negative: the max oracle is no longer a min-cut."""

    @classmethod
    def for_weight(cls, k: int, value: float) -> NonSubmodularError:
        """The error for the negative pairwise weight ``w_P[k] = value``."""
        return cls(f"pairwise weight w_P[{k}] = {value:.6g} is negative: the graph-cut "
                   "oracle is exact only for w_P >= 0 (Osokin et al. (2016), App. I.3). "
                   "Train with the box constraint of GraphCutModel.weight_bounds() "
                   "(Osokin et al. (2016), App. H)")
