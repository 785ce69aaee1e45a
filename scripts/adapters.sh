#!/usr/bin/env bash
# Installs every limiter adapter's pinned dependencies into its own folder (examples/adapters/*/):
# `npm ci` from its package-lock.json, a venv from its requirements.txt. An install newer than its
# lock file is left alone. Packages come from the machine's own npm and pip configuration. A missing
# node, npm or python3-venv is installed with apt-get when run as root, or named with the command.
set -euo pipefail
cd "$(dirname "$0")/../examples/adapters"

# The Debian package that provides each tool.
declare -A package=([node]=nodejs [npm]=npm [venv]=python3-venv)

have() {
    if [ "$1" = venv ]; then python3 -m venv --help >/dev/null 2>&1; else command -v "$1" >/dev/null 2>&1; fi
}

need() {
    have "$1" && return
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "adapters: installing ${package[$1]} with apt-get" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${package[$1]}" >/dev/null || true
        have "$1" && return
    fi
    echo "adapters: the limiter adapters need $1; install it first with:" >&2
    echo "    sudo apt-get install ${package[$1]}" >&2
    exit 1
}

for dir in */; do
    dir=${dir%/}
    if [ -f "$dir/package-lock.json" ]; then
        need node
        need npm
        installed="$dir/node_modules/.package-lock.json"
        if [ ! -f "$installed" ] || [ "$dir/package-lock.json" -nt "$installed" ]; then
            echo "adapters: npm ci in examples/adapters/$dir" >&2
            (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
        fi
    fi
    if [ -f "$dir/requirements.txt" ]; then
        need venv
        installed="$dir/.venv/installed"
        if [ ! -f "$installed" ] || [ "$dir/requirements.txt" -nt "$installed" ]; then
            echo "adapters: pip venv in examples/adapters/$dir" >&2
            rm -rf "$dir/.venv"
            python3 -m venv "$dir/.venv"
            "$dir/.venv/bin/pip" install --quiet -r "$dir/requirements.txt"
            touch "$installed"
        fi
    fi
done
