"""Hypothesis profiles of the test suites (hypothesis is imported lazily)."""

from __future__ import annotations

import os

_CI_EXAMPLES = 40


def register_hypothesis_profiles(default: str = "ci") -> str:
    """Register the ``ci``, ``dev`` and ``fuzz`` profiles and load one.

    The profile comes from ``$SSVM_HYPOTHESIS_PROFILE`` (default ``default``).
    ``ci`` is derandomised, without an example database or deadline;
    ``dev`` runs 100 examples and ``fuzz`` 2000.  Imports hypothesis lazily,
    so this module does not depend on it.

    Returns
    -------
    str
        The loaded profile name.
    """
    from hypothesis import settings

    settings.register_profile("ci", derandomize=True, database=None, deadline=None,
                              print_blob=True, max_examples=_CI_EXAMPLES)
    settings.register_profile("dev", deadline=None, max_examples=100)
    settings.register_profile("fuzz", deadline=None, max_examples=2000)
    name = os.environ.get("SSVM_HYPOTHESIS_PROFILE", default)
    settings.load_profile(name)
    return name


def scaled_examples(ci_examples: int) -> int:
    """``max_examples`` for a test that runs ``ci_examples`` under the ``ci`` profile.

    Scales with the loaded profile (x2.5 for ``dev``, x50 for ``fuzz``), so
    tests that lower their budget with ``@settings`` still grow when fuzzing.

    Parameters
    ----------
    ci_examples : int
        Examples under the ``ci`` profile (40 examples by default).
    """
    from hypothesis import settings

    return max(1, round(ci_examples * settings.default.max_examples / _CI_EXAMPLES))
