#!/usr/bin/env bash
# setup-host.sh: install the Debian 12 (bookworm) host packages sfunwind needs.
# Idempotent: if every package is already installed (checked with dpkg-query)
# it does nothing and returns in well under a second. Needs root (or sudo).
#
# Usage: scripts/setup-host.sh [--check]
#   --check   only report missing packages (exit 1 if any are missing)
set -euo pipefail

PACKAGES=(
  # build
  build-essential cmake ninja-build pkg-config
  libboost-dev libelf-dev libdw-dev elfutils nlohmann-json3-dev libcapstone-dev libxxhash-dev
  # names for glibc's local functions in backtraces (__libc_start_call_main, ...)
  libc6-dbg python3
  catch2 libbenchmark-dev
  # debuggers
  gdb gdb-multiarch gdbserver lldb-19 liblldb-19-dev python3-lldb-19
  # sid chroot and foreign architectures
  debootstrap qemu-user
  binutils-aarch64-linux-gnu gcc-aarch64-linux-gnu libc6-dev-arm64-cross
  # PowerPC64 traceback-table fixtures (big- and little-endian)
  gcc-powerpc64-linux-gnu gcc-powerpc64le-linux-gnu libc6-dev-ppc64-cross libc6-dev-ppc64el-cross
  # fuzzing and lint
  clang clang-format clang-tidy cppcheck
  # libFuzzer's runtime (only a Recommends of clang)
  libclang-rt-14-dev
  # fixtures: file(1) for sanity checks, coreutils sha256sum is always present
  file
)

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == installed ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup-host: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "setup-host: missing: ${missing[*]}"
if [[ "${1:-}" == --check ]]; then
  exit 1
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup-host: need root or sudo" >&2; exit 1; }
  SUDO=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
# Third-party sources configured on some machines may be unreachable; only the
# Debian mirror matters, so a failing extra source must not stop us.
"${SUDO[@]}" apt-get update || echo "setup-host: apt-get update reported errors (continuing)" >&2
"${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
echo "setup-host: installed ${missing[*]}"
