#!/usr/bin/env bash
# The GPU check in one archive for a lent GPU machine: prepare.sh's PACK in
# .gpu/pack (ignored through .git/info/exclude), compressed to
# .gpu/pack.tar.xz (~52 MB with every model and the node tests: the device
# tool carries 64 MiB with the repository). Then, on the GPU machine (the
# device tool's command, carrying .gpu/pack.tar.xz):
#   mkdir -p /tmp/p && tar xJf .gpu/pack.tar.xz -C /tmp/p && bash tests/gpu/run.sh /tmp/p/pack
# (about 1 minute on an H100 after the machine starts).
# Usage: tests/gpu/pack.sh [MODEL...]   (as prepare.sh; about 7 minutes here)
set -euo pipefail
cd "$(dirname "$0")/../.."
exclude=$(git rev-parse --git-path info/exclude)
grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >>"$exclude"
rm -rf .gpu/pack .gpu/pack.tar.xz
tests/gpu/prepare.sh .gpu/pack "$@"
tar cf - -C .gpu pack | xz -T0 -6 >.gpu/pack.tar.xz
du -h .gpu/pack.tar.xz >&2
