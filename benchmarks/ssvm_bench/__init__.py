"""asv benchmark suites of the ssvm packages (see ../README.md).

Modules: ``common`` (base class, mixins, profiles, data helpers), ``oracles``
(max-oracle microbenchmarks) and ``solvers`` (BCFW passes, certified gaps,
peak memory).
"""
