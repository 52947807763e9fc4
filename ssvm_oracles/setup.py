"""Build the Cython oracles; they cimport the protocol of the installed ssvm-core."""

from setuptools import setup

from ssvm_core._build import cython_extensions, setup_options

setup(ext_modules=cython_extensions(
    "ssvm_oracles", ["_chain", "_multiclass", "_matching", "_distance_transform", "_tree_maxsum",
                     "_combinators", "_maxflow", "_graphcut", "_graph", "_local_dual"]),
    options=setup_options())
