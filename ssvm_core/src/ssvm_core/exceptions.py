"""Exceptions raised by the ssvm estimators."""

from __future__ import annotations

__all__ = ["ConvergenceWarning", "ModelFileError", "NotFittedError", "WorkersLostError"]


class NotFittedError(ValueError, AttributeError):
    """An estimator is used (``predict``, ``score``) before ``fit``.

    A subclass of both ``ValueError`` and ``AttributeError``, as
    scikit-learn's ``sklearn.exceptions.NotFittedError``, so that code
    catching either keeps working; scikit-learn is not needed to raise or
    catch it.
    """


class ConvergenceWarning(UserWarning):
    """A solver stopped on a budget before its certified gap reached ``tol``.

    Named as scikit-learn's ``sklearn.exceptions.ConvergenceWarning`` (filter
    it the same way), but a plain ``UserWarning`` subclass so that
    scikit-learn is not needed: ``warnings.simplefilter("ignore",
    ConvergenceWarning)`` silences it.  The message names the gap reached,
    ``tol`` and an estimate of the passes still needed
    (``ssvm_core.convergence.passes_to_tol``).
    """


class ModelFileError(ValueError):
    """A model file cannot be loaded (see ``ssvm_core.load_model``).

    The message names the file and the problem: not a model file, a newer
    format version, a missing key, a class outside the allow-list, or
    weights of the wrong size for the model.
    """


class WorkersLostError(RuntimeError):
    """Every worker of a distributed executor is gone (or they kept dying).

    Raised by ``DaskExecutor`` when no worker came back within its
    ``worker_timeout`` or the tasks of a round were lost ``max_retries + 1``
    times in a row.  ``ssvm_core.solve`` does not let it through a run that
    has started: the run stops with status ``"workers lost"``, keeping the
    model and the state of the steps made so far (resume from it once the
    cluster is back).

    Attributes
    ----------
    oracle_calls : int
        Set by ``minibatch_pass``: the oracle calls of the rounds the pass made
        before the workers were lost (0 otherwise).
    """

    oracle_calls: int = 0
