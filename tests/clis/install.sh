#!/bin/sh
# Install the pinned agent CLIs (pins.txt) from npm into a cache folder outside the clone.
#
# The folder is ${GSD_CLIS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gsd-clis}/<hash of pins.txt>;
# a finished install is marked `.installed` and reused at once. The last line printed on
# stdout is the folder holding `claude`, `gemini` and `codex`; npm's chatter goes to
# stderr. Exit 1 (with the reason) when npm is missing or the registry cannot be reached.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
pins="$here/pins.txt"
hash=$(sha256sum "$pins" | cut -c1-12)
base=${GSD_CLIS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gsd-clis}
root="$base/$hash"
if [ -f "$root/.installed" ]; then
    echo "$root/node_modules/.bin"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "make clis: npm is not installed (Node.js 20 or later is needed)" >&2
    exit 1
fi
mkdir -p "$base"
# installed beside the final folder, then renamed: an interrupted install is never used
work=$(mktemp -d "$base/.install-XXXXXX")
trap 'rm -rf "$work"' EXIT
echo '{"private": true}' >"$work/package.json"
# shellcheck disable=SC2046  # one package spec a word, none has spaces
if ! npm install --prefix "$work" --no-audit --no-fund --no-save --loglevel=error \
    $(grep -v '^#' "$pins") >&2; then
    echo "make clis: npm install failed (is the npm registry reachable?)" >&2
    exit 1
fi
touch "$work/.installed"
if ! mv -T "$work" "$root" 2>/dev/null; then
    # another install finished first: use it
    [ -f "$root/.installed" ] || { echo "make clis: cannot create $root" >&2; exit 1; }
fi
echo "$root/node_modules/.bin"
