"""Time per call of the tree max-sum (pose) oracle at LSP's size, against Osokin et al. (2016),
Table 1.

Generates ``--images`` LSP-like poses (``ssvm_data.lsp_like``: the 26-node tree,
50 arcs, ``--types`` types per arc) on square grids of each ``--grid`` size,
binds a ``PoseModel`` (d = 2,676 for 13 types) and times one loss-augmented
oracle call per image through ``ssvm_core.parallel.score_pass`` (the solver's
gap-pass path, GIL released, one thread), best of ``--repeat`` passes in CPU time
(``time.process_time``: robust on a shared machine; wall time is reported too), at two weight
vectors: w = 0 (every quadratic weight zero: the distance transforms take their
linear shortcut) and random weights with strictly positive quadratic weights
(the general case).  The work is O(P T^2 L) at worst for P parts, T types and L
positions (type pairs whose bounds show they cannot win are skipped, so the time
depends on the values); the report also gives the time per (edge x type pair x
position).  Because the skipping depends on the weights, the script also
reports Osokin et al. (2016), Table 1's own measure: the mean time per oracle call over a
box-constrained BCFW run (``--train-passes`` passes on ``--train-images``
images at each of ``--train-lams``, the paper's LSP values being 10 to 1000),
timed by ``CountingOracle(timing=True)``.  Osokin et al. (2016), Table 1 reports 2 s per call for
LSP-small (MATLAB, features read from disk), on a grid the paper does not state.

Example::

    python benchmarks/scripts/bench_tree.py --grid 16 32 64 --images 3 --repeat 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _report import print_header, write_json
from _timing import mean_call_seconds_in_training

from ssvm_core import as_oracle
from ssvm_core.parallel import score_pass
from ssvm_data import lsp_like
from ssvm_data.lsp import POSE_TREE_PARENTS, SCALE_PARTS
from ssvm_oracles import PoseModel

PAPER_CALL_S = 2.0  # Osokin et al. (2016), Table 1, LSP-small


def _weights(model: PoseModel, rng: np.random.Generator) -> dict[str, np.ndarray]:
    lower, _ = model.weight_bounds()
    w = rng.normal(size=model.size_joint_feature)
    quadratic = lower == 0
    w[quadratic] = rng.uniform(0.05, 1.0, size=int(quadratic.sum()))
    return {"w_zero": np.zeros(model.size_joint_feature), "w_positive": w}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", type=int, nargs="+", default=[16, 32, 64],
                        help="grid sizes (H = W)")
    parser.add_argument("--types", type=int, default=13)
    parser.add_argument("--images", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--train-lams", type=float, nargs="*", default=[10.0, 100.0])
    parser.add_argument("--train-images", type=int, default=10)
    parser.add_argument("--train-passes", type=int, default=5)
    parser.add_argument("--json", default=None, help="also write the report here")
    args = parser.parse_args(argv)

    print_header("bench_tree.py", argv)
    model = PoseModel(POSE_TREE_PARENTS, SCALE_PARTS, n_types=args.types)
    n_edges = model.n_parts - 1
    print(f"{model.n_parts} parts, {model.n_arcs} arcs, {args.types} types per arc, "
          f"d = {model.size_joint_feature}; {args.images} images per grid")
    report = {"n_parts": model.n_parts, "n_types": args.types,
              "n_features": model.size_joint_feature, "paper_call_s": PAPER_CALL_S,
              "grids": {}}
    for size in args.grid:
        X, Y = lsp_like(args.images, grid=(size, size), n_types=args.types, random_state=0)
        compiled = as_oracle(model.bind(X, Y))
        row = {}
        for name, w in _weights(model, np.random.default_rng(0)).items():
            wall, cpu = [], []
            for _ in range(args.repeat):
                start, start_cpu = time.perf_counter(), time.process_time()
                score_pass(compiled, w, n_jobs=1)
                wall.append((time.perf_counter() - start) / args.images)
                cpu.append((time.process_time() - start_cpu) / args.images)
            best = min(cpu)
            unit = n_edges * args.types ** 2 * size * size
            row[name] = {"call_cpu_s": best, "call_wall_s": min(wall),
                         "ns_per_edge_pair_position": best / unit * 1e9}
            print(f"{size:>3} x {size:<3} {name:>10}: {best * 1e6:10.0f} us CPU per call "
                  f"(wall {min(wall) * 1e6:.0f} us; {best / unit * 1e9:5.1f} ns per edge x "
                  f"type pair x position; {PAPER_CALL_S / best:6.1f}x faster than 2 s)")
        report["grids"][str(size)] = row
        X, Y = lsp_like(args.train_images, grid=(size, size), n_types=args.types,
                        random_state=1)
        for lam in args.train_lams:
            mean = mean_call_seconds_in_training(model.bind(X, Y), lam, model.weight_bounds(),
                                                 args.train_passes)
            row[f"training_lam_{lam:g}"] = {"call_wall_s": mean}
            print(f"{size:>3} x {size:<3} training at lam={lam:g}: {mean * 1e6:10.0f} us per call, "
                  f"mean over {args.train_passes} BCFW passes on {args.train_images} images "
                  f"({PAPER_CALL_S / mean:6.1f}x faster than 2 s)")
    write_json(args.json, report)
    return report


if __name__ == "__main__":
    main()
