"""Staleness of mini-batch BCFW: how much of a fresh corner's block gap a stale one keeps.

Runs ``solve(batch_blocks=tau)`` for ``--warm`` passes, then ``--passes`` more
passes of rounds by hand (the steps of ``minibatch_pass``: the round's calls
at its w, then the steps in the drawn order through an ``AnswerOracle``).
Before each step it also asks the oracle at the current w and compares block
gaps: g_stale (the stale answer rescored at the current w, the ground truth
when it scores below it: the gap the step uses) and g_fresh (the block's
true FW gap there; g_fresh - g_stale = (H_fresh - H_stale) / n).  Prints,
by position in the round, sum g_stale / sum g_fresh and how many stale
answers fell below the ground truth.  Problems as in ``bench_parallel.py``
(OCR-large needs ``$SSVM_DATA_HOME``; HorseSeg-like with the model's box).

Example::

    SSVM_DATA_HOME=/work/shared/data python benchmarks/scripts/bench_staleness.py \\
        --problem ocr --tau 16 --warm 10 --passes 2
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from _report import print_header

from ssvm_core import _fw, solve
from ssvm_core._batch import AnswerOracle, max_scores, solve_blocks
from ssvm_core.minibatch import round_blocks


def _problem(name: str, images: int):
    if name == "ocr":
        import ssvm_data
        from ssvm_oracles import ChainModel
        X, Y, _, _ = ssvm_data.load_ocr(split="large", data_home=os.environ["SSVM_DATA_HOME"],
                                        download=False)
        return ChainModel(n_states=26).bind(X, Y), None
    from ssvm_data import horseseg_like
    from ssvm_oracles import GraphCutModel
    X, Y = horseseg_like(images, random_state=0)
    model = GraphCutModel()
    return model.bind(X, Y), model.weight_bounds()


def _stale_score(answers, t: int, w: np.ndarray) -> float:
    """H(y; w) of the answer of round position t, 0 for the ground truth."""
    a = answers.ans_ptr[t]
    if answers.ground[a]:
        return 0.0
    span = slice(answers.psi_ptr[a], answers.psi_ptr[a + 1])
    return float(answers.loss[a] - answers.psi_val[span] @ w[answers.psi_idx[span]])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", choices=("ocr", "horseseg"), default="horseseg")
    parser.add_argument("--tau", type=int, default=16)
    parser.add_argument("--warm", type=int, default=5, help="passes before measuring")
    parser.add_argument("--passes", type=int, default=15, help="passes measured")
    parser.add_argument("--lam", type=float, default=0.01)
    parser.add_argument("--horse-images", type=int, default=50)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args(argv)
    print_header("bench_staleness.py", argv)
    oracle, box = _problem(args.problem, args.horse_images)
    n, tau = oracle.n_blocks, args.tau
    for seed in args.seeds:
        state = solve(oracle, args.lam, box=box, batch_blocks=tau, max_passes=args.warm, tol=0,
                      gap_check_every=10**9, random_state=seed).state
        rng = np.random.default_rng(1000 + seed)
        g_stale, g_fresh, below = np.zeros(tau), np.zeros(tau), np.zeros(tau, dtype=int)
        for _ in range(args.passes):
            for blocks in round_blocks(rng, "uniform", state, tau):
                answers = solve_blocks(oracle, state.w, blocks)
                for t, i in enumerate(blocks):
                    h_stale = _stale_score(answers, t, state.w)
                    below[t] += h_stale < 0.0
                    h_fresh = max_scores(oracle, state.w, [i])[0]
                    _fw.bcfw_pass(AnswerOracle(oracle, answers), state,
                                  np.array([i], dtype=np.intp), True)
                    gap = state.block_gap_estimates[i]       # the step's (stale) gap
                    g_stale[t] += gap
                    g_fresh[t] += gap + (h_fresh - max(h_stale, 0.0)) / n
        shown = [p for p in (0, 1, 3, 7, 15, 31, 63) if p < tau]
        print(f"{args.problem} tau={tau} seed={seed}, passes {args.warm}..."
              f"{args.warm + args.passes}: position: g_stale / g_fresh (answers below truth)")
        print("   " + "  ".join(f"{p}: {g_stale[p] / g_fresh[p]:.3f} ({below[p]})"
                                for p in shown))
        print(f"   all positions: {g_stale.sum() / g_fresh.sum():.3f}")


if __name__ == "__main__":
    main()
