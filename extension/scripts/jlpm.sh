#!/usr/bin/env bash
# `jlpm` (JupyterLab's bundled Yarn) with this machine's registry configured: writes the
# git-ignored .yarnrc.yml first when it is missing. Used by the Python build hook
# (hatch-jupyter-builder runs `bash scripts/jlpm.sh install` and `... run build:prod`).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f .yarnrc.yml ] || bash scripts/configure-registry.sh >&2
exec jlpm "$@"
