"""Compatibility layers: other libraries' public APIs running on ssvm's solvers and oracles."""
