#!/usr/bin/env bash
# The Python package's tests (tests/python): a fresh virtual environment over the system's packages
# (Debian's numpy and pytest), `pip install --no-build-isolation .` building the module in
# build-python/ (its own build: the module's code is position-independent, the CLI's is not), then
# pytest against the CLI in build/. Offline: pip installs nothing from an index.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test
venv=build/venv
rm -rf "$venv"
# Debian's Python (a python3 earlier on the PATH, e.g. pyenv's, sees none of its packages).
/usr/bin/python3 -m venv --system-site-packages "$venv"
# The CPU module: the tests run on the CPU, and the CLI's build already compiles the CUDA backend.
CMAKE_ARGS="-DSPLAT_CUDA=OFF ${CMAKE_ARGS:-}" "$venv/bin/pip" install --no-build-isolation --no-index -q .
# From another folder, so that the installed package is the one imported, not python/ here.
cd build
SPLAT_BINARY="$PWD/splat" venv/bin/python -m pytest -q -p no:cacheprovider ../tests/python
