#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/make_lua.sh: build the Lua 5.4 interpreter with the sid chroot's gcc
# and GNU as 2.47 (--gsframe: SFrame v3, sorted, PC-relative starts) for the
# comparison benchmarks (bench/run_all.sh). A second real program next to
# the SQLite shell of tests/fixtures/large: smaller (about 700 FDEs), the size
# at which libsframe's lookup time was first measured.
#
#   bench/make_lua.sh [OUT]    default OUT: build/sid-speed/lua/lua5.4-gas-2.47
#
# Prints OUT. Does nothing when OUT exists and is newer than this script.
# Needs: root, curl, scripts/sid-chroot.sh. The source is Debian's orig
# tarball (pinned by SHA-256 from sid's Sources index), fetched once into
# build/sid-speed/lua/.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
MIRROR=${SFUNWIND_MIRROR:-http://deb.debian.org/debian}
WORK=$REPO/build/sid-speed/lua
OUT=${1:-$WORK/lua5.4-gas-2.47}

LUA_VERSION=5.4.9
ORIG=lua5.4_${LUA_VERSION}.orig.tar.gz
ORIG_SHA256=2335b6c582a52654f94612bf10d2f4672805d05329aa6568b1d8cd9e5c6fb8e6

die() { printf '[make_lua] ERROR: %s\n' "$*" >&2; exit 1; }

if [[ -x $OUT && $OUT -nt ${BASH_SOURCE[0]} ]]; then
  echo "$OUT"
  exit 0
fi
mkdir -p "$WORK" "$(dirname "$OUT")"
case $OUT in "$REPO"/*) ;; *) die "OUT must be inside $REPO (the chroot sees only the repository)" ;; esac

tarball=$WORK/$ORIG
if [[ ! -f $tarball ]] || ! echo "$ORIG_SHA256  $tarball" | sha256sum -c --status; then
  curl -sSfL -o "$tarball.part" "$MIRROR/pool/main/l/lua5.4/$ORIG" || die "download of $ORIG failed"
  mv "$tarball.part" "$tarball"
fi
echo "$ORIG_SHA256  $tarball" | sha256sum -c --status || die "$ORIG: SHA-256 mismatch"

src=$WORK/lua-$LUA_VERSION
rm -rf "$src"
tar -xzf "$tarball" -C "$WORK"
[[ -f $src/src/lua.c ]] || die "$ORIG does not unpack to lua-$LUA_VERSION/src"

# Lua's own `make linux` flags (src/Makefile), plus --gsframe; everything
# but the stand-alone compiler luac.c goes into the interpreter.
"$REPO/scripts/sid-chroot.sh" run -- sh -c '
  set -e
  cd "$1/src"
  files=$(ls *.c | grep -v "^luac\.c$")
  gcc -std=gnu99 -O2 -Wall -Wextra -DLUA_COMPAT_5_3 -DLUA_USE_LINUX -Wa,--gsframe \
      -o "$2" $files -Wl,-E -lm -ldl
  "$2" -e "local t = {} for i = 1, 1000 do t[i] = i * i end assert(t[1000] == 1000000)"
  readelf -S --wide "$2" | grep -q " \.sframe " || { echo "no .sframe in $2" >&2; exit 1; }
' sh "$src" "$OUT" || die "build in the sid chroot failed"
echo "$OUT"
