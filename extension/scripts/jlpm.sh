#!/usr/bin/env bash
# `jlpm` (JupyterLab's bundled Yarn) with this machine's registry configured: writes the
# git-ignored .yarnrc.yml first when it is missing. Used by the Python build hook
# (hatch-jupyter-builder runs `bash scripts/jlpm.sh install` and `... run build:prod`).
#
# Building the extension needs Node.js and the package registry; when either is missing this
# says which, and how to get past it, instead of a bare exit status.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "cutile-lab extension build: $*" >&2; }

way_around() {
    say "ways around it:"
    say "  - install cutile-lab from a wheel, or from an sdist made where the extension was built"
    say "    (python -m build): both carry the prebuilt extension and need no Node.js"
    say "  - or build the extension once where Node.js and the registry are reachable: it lands"
    say "    in cutile_lab/labextension/, and later builds from this checkout reuse it"
}

if ! command -v node >/dev/null 2>&1; then
    say "Node.js is not installed (no \`node\` on PATH); it builds the JupyterLab extension"
    say "install Node.js 18 or newer (Debian/Ubuntu: apt-get install nodejs npm), then build again"
    way_around
    exit 1
fi
if ! command -v jlpm >/dev/null 2>&1; then
    say "\`jlpm\` is not on PATH: it comes with JupyterLab (pip install 'jupyterlab>=4.6,<5')"
    exit 1
fi

[ -f .yarnrc.yml ] || bash scripts/configure-registry.sh >&2

status=0
jlpm "$@" || status=$?
if [ "$status" -ne 0 ] && [ "${1:-}" = install ]; then
    registry="$(sed -n 's/^npmRegistryServer: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' .yarnrc.yml)"
    say "could not install the extension's JavaScript dependencies from the package registry"
    say "  (${registry:-the default registry}; set in $(pwd)/.yarnrc.yml): is it reachable"
    say "  from here? Point npm at one that is (npm config set registry URL), delete"
    say "  .yarnrc.yml so that it is written again, and build again"
    way_around
fi
exit "$status"
