"""Exact duality gap against effective passes for BCFW block-sampling schemes.

Compares uniform, per-pass permutation and gap sampling (001 Alg. 2) on OCR
(real data from $SSVM_DATA_HOME, or ``--synthetic N`` OCR-like words), with a
gap check every ``--gap-check-every`` passes, over several seeds.  Prints a
table and optionally writes a CSV (scheme, seed, effective_passes, time, gap).

Example::

    SSVM_DATA_HOME=../shared/data python benchmarks/scripts/bench_sampling.py \\
        --split large --lam 0.001 --passes 30 --seeds 3 --csv sampling.csv
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys

from ssvm_core import solve
from ssvm_data import load_ocr, ocr_like
from ssvm_oracles import ChainModel

SCHEMES = ("uniform", "perm", "gap")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="large", choices=["small", "large"])
    parser.add_argument("--synthetic", type=int, default=None, metavar="N",
                        help="use N synthetic OCR-like words instead of real OCR")
    parser.add_argument("--lam", type=float, default=0.001)
    parser.add_argument("--passes", type=int, default=30)
    parser.add_argument("--gap-check-every", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--csv", default=None)
    args = parser.parse_args(argv)

    if args.synthetic:
        X, Y = ocr_like(args.synthetic, random_state=0)
        data = f"synthetic OCR-like, n={len(X)}"
    else:
        X, Y, _, _ = load_ocr(split=args.split)
        data = f"OCR-{args.split}, n={len(X)}"
    oracle = ChainModel(n_states=26).bind(X, Y)
    print(f"$ {' '.join(['bench_sampling.py'] + (argv if argv is not None else sys.argv[1:]))}")
    print(f"{data}, lam={args.lam}, passes={args.passes}, gap check every "
          f"{args.gap_check_every}, seeds={args.seeds}, no averaging (plain iterate)")

    rows = []
    for scheme in SCHEMES:
        for seed in range(args.seeds):
            result = solve(oracle, args.lam, sampling=scheme, averaging=False, tol=0,
                           max_passes=args.passes, gap_check_every=args.gap_check_every,
                           random_state=seed)
            rows += [{"scheme": scheme, "seed": seed, "effective_passes": r["effective_passes"],
                      "time": r["time"], "gap": r["gap"]}
                     for r in result.history if r["gap"] is not None]

    checkpoints = sorted({r["effective_passes"] for r in rows})
    print(f"{'effective passes':>17}" + "".join(f"{s:>26}" for s in SCHEMES))
    for eff in checkpoints:
        cells = []
        for scheme in SCHEMES:
            gaps = [r["gap"] for r in rows if r["scheme"] == scheme
                    and r["effective_passes"] == eff]
            cells.append(f"{statistics.median(gaps):.4f} [{min(gaps):.4f},{max(gaps):.4f}]")
        print(f"{eff:>17.0f}" + "".join(f"{c:>26}" for c in cells))
    print("(median [min, max] exact gap over seeds)")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
