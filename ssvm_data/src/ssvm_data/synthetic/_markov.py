"""Sampling Markov chains, shared by the OCR-like and the HMM generators."""

from __future__ import annotations

import numpy as np


def sample_chains(rng: np.random.Generator, start: np.ndarray, transition: np.ndarray,
                   lengths: np.ndarray) -> list[np.ndarray]:
    """Draw one Markov chain per length, all chains advanced together."""
    uniforms = rng.random((len(lengths), lengths.max()))
    states = np.empty(uniforms.shape, dtype=np.int32)
    states[:, 0] = inverse_cdf(np.cumsum(start)[None, :], uniforms[:, 0])
    cdf = np.cumsum(transition, axis=1)
    for t in range(1, uniforms.shape[1]):
        states[:, t] = inverse_cdf(cdf[states[:, t - 1]], uniforms[:, t])
    return [states[i, :length].copy() for i, length in enumerate(lengths)]


def inverse_cdf(cdf: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Index of the first cdf entry above each uniform (cdf rows broadcast)."""
    return np.minimum((uniforms[:, None] >= cdf).sum(axis=1), cdf.shape[-1] - 1)
