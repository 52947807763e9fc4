"""asv benchmark suites of the ssvm packages (see ../README.md).

Modules: ``common`` (base class, mixins, profiles, data helpers), ``oracles``
(max-oracle microbenchmarks), ``solvers`` (BCFW passes, certified gaps,
peak memory), ``parallel`` (mini-batch rounds) and ``memory`` (bytes of a solver
state, dense against compact blocks).
"""
