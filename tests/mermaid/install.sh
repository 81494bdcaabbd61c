#!/bin/sh
# Install the real Mermaid parser (mermaid 11.x, and jsdom for the DOM it expects) from
# npm into ${XDG_CACHE_HOME:-$HOME/.cache}/gsd-mermaid, once; print that folder. Exit 1
# with the reason when npm is missing or the registry cannot be reached.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=${XDG_CACHE_HOME:-$HOME/.cache}/gsd-mermaid
if [ -d "$root/node_modules/mermaid" ] && [ -d "$root/node_modules/jsdom" ]; then
    cp "$here/parse.mjs" "$root/parse.mjs"  # node resolves its imports beside the script
    echo "$root"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "make mermaid: npm is not installed (Node.js 20 or later is needed)" >&2
    exit 1
fi
mkdir -p "$root"
if ! npm install --prefix "$root" --no-audit --no-fund --loglevel=error mermaid@11 jsdom >&2; then
    echo "make mermaid: npm install failed (is the npm registry reachable?)" >&2
    exit 1
fi
cp "$here/parse.mjs" "$root/parse.mjs"
echo "$root"
