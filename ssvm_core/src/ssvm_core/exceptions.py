"""Exceptions raised by the ssvm estimators."""

from __future__ import annotations

__all__ = ["NotFittedError"]


class NotFittedError(ValueError, AttributeError):
    """An estimator is used (``predict``, ``score``) before ``fit``.

    A subclass of both ``ValueError`` and ``AttributeError``, as
    scikit-learn's ``sklearn.exceptions.NotFittedError``, so that code
    catching either keeps working; scikit-learn is not needed to raise or
    catch it.
    """
