"""asv benchmark suites of the ssvm packages (see ../README.md).

Modules: ``common`` (base class, mixins, profiles, data helpers), ``problems`` (one
small synthetic problem per model, for its block storages), ``oracles`` (max-oracle
microbenchmarks), ``solvers`` (BCFW passes, certified gaps, peak memory, a pass by
model and block storage), ``parallel`` (mini-batch rounds) and ``memory`` (bytes of a
solver state, dense against compact blocks).
"""
