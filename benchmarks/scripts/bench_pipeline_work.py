"""The work of one compiled pipelined pass against one serial BCFW pass, for an
instruction counter.

Loads OCR-large or CoNLL-2000 (lam = 0.01; ``--synthetic N``: N synthetic
OCR-like words instead, no data needed), warms a state with ``--warm`` BCFW
passes (seed 0), then makes one pass in a fixed draw order (seed 7): serial BCFW
(``_fw.bcfw_pass``) or the compiled pipeline (``CompiledPipeline(oracle, state,
--lag, --threads).one_pass``; on one thread the master makes every call, so its
steps are the two-thread master's).  Prints the pass's CPU seconds (and each
thread's, for the pipeline).  Wall and CPU times on a loaded machine are not the
point: run it under callgrind and compare the inclusive counts of ``bcfw_steps``
with those of ``CompiledPipeline._steps`` and ``_step`` (``docs/scaling.md``,
"Where the master's extra work goes").

Example::

    SSVM_DATA_HOME=/work/shared/data valgrind --tool=callgrind --cache-sim=yes \\
        python benchmarks/scripts/bench_pipeline_work.py --problem ocr --pass pipeline
    callgrind_annotate --threshold=100 --inclusive=yes --auto=no callgrind.out.<pid>
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from ssvm_core import SolverState, _fw
from ssvm_core._pipeline import CompiledPipeline
from ssvm_core.options import sampling_order


def _oracle(name: str, synthetic: int):
    """The bound oracle of OCR-large (``$SSVM_DATA_HOME``), CoNLL-2000 or ``synthetic``
    OCR-like words (when > 0), compact blocks."""
    import ssvm_data
    if synthetic > 0:
        from ssvm_oracles import ChainModel
        X, Y = ssvm_data.synthetic.ocr_like(synthetic, random_state=0)
        return ChainModel(n_states=26).bind(X, Y)
    if name == "ocr":
        from ssvm_oracles import ChainModel
        X, Y, _, _ = ssvm_data.load_ocr(split="large", data_home=os.environ["SSVM_DATA_HOME"],
                                        download=False)
        return ChainModel(n_states=26).bind(X, Y)
    X, Y, X_test, Y_test = ssvm_data.load_dataset("conll")
    return ssvm_data.model_for("conll", Y, Y_test).bind(X, Y)


def main(argv=None):
    """Run the measured pass; returns its state (for the smoke test)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", choices=("ocr", "conll"), default="ocr")
    parser.add_argument("--synthetic", type=int, default=0, metavar="N",
                        help="N synthetic OCR-like words instead of --problem")
    parser.add_argument("--pass", dest="kind", choices=("serial", "pipeline"),
                        default="pipeline", help="the pass measured (default: pipeline)")
    parser.add_argument("--warm", type=int, default=5, help="BCFW passes before it (5)")
    parser.add_argument("--lag", type=int, default=4, help="the pipeline's lag L (4)")
    parser.add_argument("--threads", type=int, choices=(1, 2), default=1,
                        help="the pipeline's threads (1: the master makes every call)")
    args = parser.parse_args(argv)
    oracle = _oracle(args.problem, args.synthetic)
    state = SolverState.for_oracle(oracle, 0.01, True, None)
    rng = np.random.default_rng(0)
    for _ in range(args.warm):
        _fw.bcfw_pass(oracle, state, sampling_order(rng, "uniform", oracle.n_blocks), True)
    order = sampling_order(np.random.default_rng(7), "uniform", oracle.n_blocks)
    start = time.process_time()
    if args.kind == "serial":
        _fw.bcfw_pass(oracle, state, order, True)
        detail = ""
    else:
        pipe = CompiledPipeline(oracle, state, args.lag, args.threads)
        pipe.one_pass(order)
        (master, helper), (idle_m, idle_h) = pipe.cpu_seconds, pipe.idle_seconds
        detail = (f" (master {master:.4f} s, idle {idle_m:.4f}; helper {helper:.4f} s, "
                  f"idle {idle_h:.4f})")
    name = f"ocr_like({args.synthetic})" if args.synthetic > 0 else args.problem
    print(f"{name} {args.kind} pass: {time.process_time() - start:.4f} s CPU{detail}")
    return state


if __name__ == "__main__":
    main()
