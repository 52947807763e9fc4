#!/usr/bin/env bash
# Release check: build each distribution's wheel in dependency order, then
# install each package *alone* (with only its declared dependencies) into a
# fresh virtual environment and import it with its own version.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dist="$work/dist"

python3 -m venv "$work/build-env"
"$work/build-env/bin/pip" install -q -r requirements/build.txt
for pkg in ssvm_data ssvm_core ssvm_oracles ssvm_paths; do
    "$work/build-env/bin/pip" wheel -q --no-deps --no-build-isolation -w "$dist" "./$pkg"
    # ssvm_oracles builds against the installed ssvm-core: install each wheel once built.
    "$work/build-env/bin/pip" install -q --no-deps --find-links "$dist" "./$pkg" \
        --no-build-isolation
done

for pkg in ssvm_data ssvm_core ssvm_oracles ssvm_paths; do
    dist_name=${pkg/_/-}
    python3 -m venv "$work/env-$pkg"
    PIP_FIND_LINKS="$dist" "$work/env-$pkg/bin/pip" install -q "$dist_name"
    (cd "$work" && "$work/env-$pkg/bin/python" -c \
        "import $pkg; print('$dist_name', $pkg.__version__, 'imports alone')")
done
