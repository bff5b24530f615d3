#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/check/large_codebase.sh: build a real code base with both SFrame
# writers of the sid chroot and time `sfunwind check` on the results.
#
#   tests/check/large_codebase.sh [--sfunwind PATH] [--keep]
#
# The code base is Zstandard (Debian source package libzstd, orig tarball
# pinned below): the `zstd` program with the library compiled in, about
# 1500 functions, built four times inside the chroot:
#
#   zstd-gas-2.47          gcc 16 + GNU as/ld 2.47, -Wa,--gsframe    -> SFrame v3
#   zstd-clang-23          clang 23 + lld 23, full LTO, -gsframe      -> SFrame v2
#   zstd-gas-2.47-aarch64  aarch64-linux-gnu-gcc 16 + binutils 2.47  -> SFrame v3
#   zstd-gas-2.47-s390x    s390x-linux-gnu-gcc 16 + binutils 2.47    -> SFrame v3
#
# (clang needs LTO for the same reason as tests/fixtures/large/make.sh: lld
# 23 concatenates per-object .sframe sections into an invalid one. The
# x86-64 Huffman decoder in assembly is disabled for clang, since its object
# would bring a second .sframe into the LTO link.)
#
# Then, on the host, `sfunwind check --time` on each binary, the JSON
# report to build/check-large/<binary>.check.json, and `sfunwind check
# --callee-saved` (the callee-saved register analysis against the CFI). The throughput printed is
# breakpoints compared (row boundaries of either table; every instruction
# between two has the same rules) and bytes of code, per second of wall time
# for the whole file (reading included).
#
# Needs root (the chroot), curl, a built sfunwind (default:
# build/check/cli/sfunwind). Work files: build/check-large/.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CHROOT_SH=$REPO/scripts/sid-chroot.sh
WORK=$REPO/build/check-large
MIRROR=${SFUNWIND_MIRROR:-http://deb.debian.org/debian}

# Pinned input: `apt-cache showsrc libzstd` (sid, 1.5.7+dfsg-4).
ZSTD_VERSION=1.5.7+dfsg
ORIG=libzstd_${ZSTD_VERSION}.orig.tar.xz
ORIG_SHA256=0c092ef267edce57ba7f3f2645c861f72eaf5e76273c6c3632869423464b90a5
SRCDIR=$WORK/src

OPT="-O2 -fomit-frame-pointer"
GAS_CFLAGS="$OPT -Wa,--gsframe"
CLANG_CFLAGS="$OPT -flto -Wa,--allow-experimental-sframe -Wa,--gsframe -DZSTD_DISABLE_ASM"
CLANG_LDFLAGS="-flto -fuse-ld=lld -Wl,-mllvm,-gsframe"
OUTPUTS=(zstd-gas-2.47 zstd-clang-23 zstd-gas-2.47-aarch64 zstd-gas-2.47-s390x)

log() { printf '[large-check] %s\n' "$*" >&2; }
die() { printf '[large-check] ERROR: %s\n' "$*" >&2; exit 1; }

download() {
  mkdir -p "$WORK"
  local tarball=$WORK/$ORIG
  if [[ ! -f $tarball ]] || ! echo "$ORIG_SHA256  $tarball" | sha256sum -c --status; then
    log "downloading $ORIG"
    curl -sSfL -o "$tarball.part" "$MIRROR/pool/main/libz/libzstd/$ORIG"
    mv "$tarball.part" "$tarball"
  fi
  echo "$ORIG_SHA256  $tarball" | sha256sum -c --status || die "$ORIG: SHA-256 mismatch"
  rm -rf "$SRCDIR"
  mkdir -p "$SRCDIR"
  tar -C "$SRCDIR" --strip-components=1 -xJf "$tarball"
  [[ -f $SRCDIR/programs/Makefile ]] || die "$ORIG does not unpack to a zstd tree"
}

# One build of programs/zstd in its own copy of the tree (they run in parallel).
build_one() {
  local name=$1 cc=$2 cflags=$3 ldflags=$4 tree=$WORK/tree-$1 run=${5:-}
  rm -rf "$tree"
  cp -a "$SRCDIR" "$tree"
  make -C "$tree/programs" -j1 zstd CC="$cc" CFLAGS="$cflags" LDFLAGS="$ldflags" \
       HAVE_ZLIB=0 HAVE_LZMA=0 HAVE_LZ4=0 >"$WORK/$name.build.log" 2>&1 ||
    die "$name: build failed, see $WORK/$name.build.log"
  cp "$tree/programs/zstd" "$WORK/$name"
  # It must be a working program, not just a section.
  local out
  out=$(printf 'sframe %.0s' {1..100} | $run "$WORK/$name" -q -c | $run "$WORK/$name" -q -d -c | head -c 13)
  [[ $out == "sframe sframe" ]] || die "$name: round trip printed '$out'"
}

inside_build() {
  log "building zstd with gcc + gas 2.47 and clang 23 + lld 23 (in parallel)"
  local start=$SECONDS
  build_one zstd-gas-2.47 gcc "$GAS_CFLAGS" "" &
  local gcc_pid=$!
  build_one zstd-clang-23 clang-23 "$CLANG_CFLAGS" "$CLANG_LDFLAGS"
  wait "$gcc_pid" || die "gcc build failed"
  # The cross builds (sid's gcc 16 + binutils 2.47 for AArch64 and s390x),
  # run through qemu-user for the round trip.
  build_one zstd-gas-2.47-aarch64 aarch64-linux-gnu-gcc "$GAS_CFLAGS" "" \
    "qemu-aarch64 -L /usr/aarch64-linux-gnu" &
  gcc_pid=$!
  build_one zstd-gas-2.47-s390x s390x-linux-gnu-gcc "$GAS_CFLAGS" "" "qemu-s390x -L /usr/s390x-linux-gnu"
  wait "$gcc_pid" || die "aarch64 build failed"
  log "built in $((SECONDS - start)) s"
  {
    gcc --version | sed -n 1p; as --version | sed -n 1p; ld --version | sed -n 1p
    clang-23 --version | sed -n 1p; ld.lld-23 --version | sed -n 1p
  } >"$WORK/toolchains.txt"
  for b in "${OUTPUTS[@]}"; do
    objdump --sframe=.sframe "$WORK/$b" | grep -E 'Version|Num FDEs|Num FREs' | tr -s ' ' >"$WORK/$b.sframe-header.txt"
  done
}

SFUNWIND=$REPO/build/check/cli/sfunwind
KEEP=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --inside-build) inside_build; exit 0 ;;
    --sfunwind) SFUNWIND=$2; shift ;;
    --keep) KEEP=1 ;;
    *) die "unknown option $1 (see the header of $0)" ;;
  esac
  shift
done

[[ $(id -u) -eq 0 ]] || die "must run as root (the sid chroot)"
[[ -x $SFUNWIND ]] || die "no sfunwind at $SFUNWIND (build it, or pass --sfunwind)"
missing=0
for b in "${OUTPUTS[@]}"; do [[ -x $WORK/$b ]] || missing=1; done
if [[ $KEEP -eq 0 || $missing -eq 1 ]]; then
  download
  "$CHROOT_SH" run -- bash "$HERE/large_codebase.sh" --inside-build
fi
cat "$WORK/toolchains.txt"
status=0
for b in "${OUTPUTS[@]}"; do
  log "$b: $(tr '\n' ' ' <"$WORK/$b.sframe-header.txt")"
  # --fail-on=mismatch: a disagreement in this real code base is reported
  # by the exit status (GNU ld's .plt.got row is one, see the report).
  "$SFUNWIND" check --time --no-progress "$WORK/$b" || status=$?
  "$SFUNWIND" check --json --details --no-progress --fail-on=none "$WORK/$b" >"$WORK/$b.check.json"
  # The callee-saved registers against the CFI at every instruction: exit
  # 1 on any wrong rule.
  "$SFUNWIND" check --callee-saved --no-progress "$WORK/$b" || status=$?
done
log "JSON reports: $WORK/*.check.json"
exit "$status"
