#!/usr/bin/env bash
# Build the prebuilt (federated) labextension into ../cutile_lab/labextension.
# `jupyter labextension build` wants to fetch JupyterLab's core package metadata from the
# network unless it is given the copy that ships inside the installed jupyterlab package, so
# hand it that file. Extra arguments (e.g. `--development True`) are passed through.
# The Python used is the first of: $PYTHON, the interpreter of the `jupyter` on PATH (that is
# the isolated build environment's during `pip install`), python3, python; it must have
# jupyterlab installed.
set -euo pipefail
cd "$(dirname "$0")/.."

candidates=()
[ -n "${PYTHON:-}" ] && candidates+=("$PYTHON")
if jup="$(command -v jupyter)"; then
  first="$(head -n 1 "$jup")"
  case "$first" in
    '#!/bin/sh'*) # pip's trampoline for long paths: '''exec' "/path/to/python" "$0" "$@"
      candidates+=("$(sed -n "2s/^'''exec' \"\{0,1\}\([^\" ]*\).*/\1/p" "$jup")") ;;
    '#!'*) first="${first#\#!}"; candidates+=("${first%% *}") ;;
  esac
  candidates+=("$(dirname "$jup")/python")
fi
candidates+=(python3 python)

py=""
for c in "${candidates[@]}"; do
  if [ -n "$c" ] && "$c" -c 'import jupyterlab' >/dev/null 2>&1; then py="$c"; break; fi
done
if [ -z "$py" ]; then
  echo "build-labextension.sh: no Python with jupyterlab found (tried: ${candidates[*]})" >&2
  exit 1
fi
core="$("$py" -c 'import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging", "package.json"))')"
exec "$py" -m jupyterlab.labextensions build . --core-package-file "$core" "$@"
