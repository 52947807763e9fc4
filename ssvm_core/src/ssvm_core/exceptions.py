"""Exceptions raised by the ssvm estimators."""

from __future__ import annotations

__all__ = ["ModelFileError", "NotFittedError"]


class NotFittedError(ValueError, AttributeError):
    """An estimator is used (``predict``, ``score``) before ``fit``.

    A subclass of both ``ValueError`` and ``AttributeError``, as
    scikit-learn's ``sklearn.exceptions.NotFittedError``, so that code
    catching either keeps working; scikit-learn is not needed to raise or
    catch it.
    """


class ModelFileError(ValueError):
    """A model file cannot be loaded (see ``ssvm_core.load_model``).

    The message names the file and the problem: not a model file, a newer
    format version, a missing key, a class outside the allow-list, or
    weights of the wrong size for the model.
    """
