#!/usr/bin/env bash
# Install every ssvm distribution into the active Python environment, in
# dependency order: ssvm-oracles compiles against the *installed* ssvm-core
# (it cimports ssvm_core/_oracle.pxd), so build isolation is off and the
# build tools come from requirements/build.txt first.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -r requirements/build.txt
# ssvm_paths (pure Python) needs ssvm-core; the umbrella comes last.
# ssvm_data[hdf5] adds h5py, for MATLAB v7.3 (HDF5) .mat files;
# ssvm_oracles[graphcut] adds PyMaxflow (GPL-3.0), GraphCutModel(backend="pymaxflow");
# ssvm_oracles[latent] adds scikit-learn, the k-means start of the latent models;
# ssvm_core[dask] adds dask.distributed, for mini-batch BCFW on a Dask cluster.
for pkg in "ssvm_data[hdf5]" "ssvm_core[dask]" "ssvm_oracles[graphcut,latent]" ssvm_paths; do
    python -m pip install --no-build-isolation "./$pkg"
done
python -m pip install --no-build-isolation ".[test]"
