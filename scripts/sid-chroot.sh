#!/usr/bin/env bash
# sid-chroot.sh: a cached Debian sid chroot holding the SFrame writers and
# debuggers that bookworm lacks (gcc 16, binutils 2.47 = SFrame v3, trixie's
# binutils 2.44 = SFrame v2, clang/lld 23, GDB 18, LLDB 23, cross aarch64/s390x,
# qemu-user 11).
#
# Measured on the 2-core bookworm machine (2026-11-21):
#   cold `ensure` (debootstrap + apt install, 261 packages in all, + trixie
#                  binutils 2.44 + writer checks; ~2.2 GB on disk):            145 s
#   warm `ensure` (stamp matches, mounts already present):                     0.10 s
#   warm `run -- true`:                                                        0.12 s
#
# Usage:
#   scripts/sid-chroot.sh ensure           build if missing or out of date, then mount
#   scripts/sid-chroot.sh run [--] CMD...  ensure, then run CMD inside the chroot
#   scripts/sid-chroot.sh shell            interactive bash inside the chroot
#   scripts/sid-chroot.sh path             print ROOT (no side effects)
#   scripts/sid-chroot.sh umount           unmount everything this script mounted
#   scripts/sid-chroot.sh remove           unmount, then delete ROOT (next ensure = cold build)
#   scripts/sid-chroot.sh verify           re-run the SFrame writer checks
#
# Location: ROOT=${SFUNWIND_CHROOT:-/var/cache/sfunwind/sid} (outside the repo,
# so it survives between sessions on the same machine). The stamp file
# ROOT/.sfunwind-stamp records a hash of the package lists and of the recipe
# version; when it differs the chroot is updated in place (apt-get install),
# and rebuilt from scratch only if the debootstrap stage never completed.
#
# Mounts (idempotent; checked with `mountpoint -q`, left in place for reuse,
# removed by `umount`):
#   proc -> ROOT/proc, sysfs -> ROOT/sys, bind /dev -> ROOT/dev,
#   bind /dev/pts -> ROOT/dev/pts,
#   bind REPO -> ROOT/REPO  (REPO = this script's repository, same absolute
#   path inside, e.g. /work/main -> ROOT/work/main), so paths are identical
#   inside and outside. Extra directories: SFUNWIND_CHROOT_BINDS="dir1 dir2".
# `run` starts in the same directory as the caller if that directory is under
# a bind-mounted path, otherwise in /. The environment is reset to a minimal one
# (PATH, HOME=/root, LANG=C.UTF-8, TERM); pass variables with `run -- env X=1 CMD`.
#
# Inside the chroot:
#   /opt/binutils-2.44/bin/{as,ld,objdump,readelf,objcopy,strip,nm}
#       wrappers around trixie's binutils 2.44 (SFrame v2 writer);
#       use `gcc -B/opt/binutils-2.44/bin/ -Wa,--gsframe ...`
#   /usr/bin/{as,ld,objdump,readelf} = sid binutils 2.47 (SFrame v3 writer)
#   clang-23 / lld-23 (`-Wa,--allow-experimental-sframe -Wa,--gsframe`, v2 PCREL)
#   {aarch64,s390x}-linux-gnu-gcc (v3), qemu-aarch64, qemu-s390x
#   gdb 18, gdb-multiarch, gdbserver, lldb-23, python3-lldb-23, liblldb-23-dev
# shellcheck disable=SC2016
set -euo pipefail
# (lint) single-quoted scripts below are expanded inside the chroot on purpose

ROOT=${SFUNWIND_CHROOT:-/var/cache/sfunwind/sid}
ROOT=${ROOT%/}
MIRROR=${SFUNWIND_MIRROR:-http://deb.debian.org/debian}
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)
RECIPE_VERSION=3   # bump to force an update of existing chroots

SID_PACKAGES=(
  gcc g++ libc6-dev binutils cmake make ninja-build pkg-config python3 file
  gdb gdb-multiarch gdbserver lldb-23 python3-lldb-23 liblldb-23-dev clang-23 lld-23
  catch2 libboost-dev libelf-dev libdw-dev elfutils libsframe-dev libiberty-dev nlohmann-json3-dev
  libcapstone-dev libxxhash-dev
  libbenchmark-dev libc6-dbg
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross
  gcc-s390x-linux-gnu libc6-dev-s390x-cross
  qemu-user ca-certificates xz-utils
)
TRIXIE_BINUTILS=(
  binutils-x86-64-linux-gnu libbinutils libsframe1 libctf0 libctf-nobfd0
  binutils-common libjansson4
)
B244=/opt/binutils-2.44

log() { printf '[sid-chroot] %s\n' "$*" >&2; }
die() { printf '[sid-chroot] ERROR: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "must run as root (chroot, mount, debootstrap)"

wanted_hash() {
  { echo "recipe=$RECIPE_VERSION mirror=$MIRROR"
    printf '%s\n' "${SID_PACKAGES[@]}" "--" "${TRIXIE_BINUTILS[@]}"
    # the recipe itself: any change to the build steps below changes the hash
    sed -n '/^## BEGIN RECIPE/,/^## END RECIPE/p' "${BASH_SOURCE[0]}"
  } | sha256sum | cut -d' ' -f1
}

in_root() {  # run a command inside the chroot with a clean environment
  chroot "$ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    DEBIAN_FRONTEND=noninteractive "$@"
}

mount_one() {  # mount_one TARGET mount-args...
  local target=$1; shift
  mkdir -p "$target"
  if ! mountpoint -q "$target"; then
    mount "$@" "$target" || die "mount $* $target failed"
  fi
}

bind_dirs() {
  local d
  printf '%s\n' "$REPO"
  for d in ${SFUNWIND_CHROOT_BINDS:-}; do (cd "$d" && pwd); done
}

do_mounts() {
  mount_one "$ROOT/proc" -t proc proc
  mount_one "$ROOT/sys" -t sysfs sysfs
  mount_one "$ROOT/dev" --bind /dev
  mount_one "$ROOT/dev/pts" --bind /dev/pts
  local d
  while read -r d; do
    [[ -n "$d" ]] || continue
    # A bind made earlier can be stale: the host folder was replaced (or
    # remounted) since, and the chroot would see the old, empty one.
    if mountpoint -q "$ROOT$d" && [[ $(stat -c %d:%i "$ROOT$d") != $(stat -c %d:%i "$d") ]]; then
      umount -l "$ROOT$d" || die "cannot unmount the stale bind $ROOT$d"
    fi
    mount_one "$ROOT$d" --bind "$d"
  done < <(bind_dirs)
  # resolv.conf can be a symlink in the chroot; replace it by a plain copy
  if ! cmp -s /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null; then
    rm -f "$ROOT/etc/resolv.conf"; cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
  fi
}

mounts_under_root() {  # deepest first
  awk -v r="$ROOT" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts |
    awk '{ print length($0) " " $0 }' | sort -rn | cut -d' ' -f2-
}

do_umount() {
  local m
  while read -r m; do
    [[ -n "$m" ]] || continue
    umount "$m" 2>/dev/null || umount -l "$m" || die "cannot unmount $m"
  done < <(mounts_under_root)
}

remove_root() {  # only after everything below ROOT is unmounted
  do_umount
  [[ -z "$(mounts_under_root)" ]] || die "refusing to delete $ROOT: mounts remain"
  rm -rf --one-file-system "$ROOT"
}

## BEGIN RECIPE
stage_debootstrap() {
  if [[ -f "$ROOT/.sfunwind-debootstrap-done" ]]; then return; fi
  command -v debootstrap >/dev/null || die "debootstrap missing: run scripts/setup-host.sh"
  if [[ -e "$ROOT" ]]; then
    log "removing incomplete chroot $ROOT"
    remove_root
  fi
  mkdir -p "$(dirname "$ROOT")"
  log "debootstrap sid into $ROOT (minbase, ~30 s)"
  debootstrap --variant=minbase sid "$ROOT" "$MIRROR" >"$ROOT.debootstrap.log" 2>&1 ||
    die "debootstrap failed, see $ROOT.debootstrap.log (and $ROOT/debootstrap/debootstrap.log)"
  touch "$ROOT/.sfunwind-debootstrap-done"
}

stage_config() {
  # The mirror's Release files look expired to this machine's clock.
  cat >"$ROOT/etc/apt/apt.conf.d/99sfunwind" <<'APT'
Acquire::Check-Valid-Until "false";
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Dpkg::Use-Pty "false";
APT
  printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
  chmod 755 "$ROOT/usr/sbin/policy-rc.d"
  echo "deb $MIRROR sid main" >"$ROOT/etc/apt/sources.list"
  rm -f "$ROOT/etc/apt/sources.list.d/debian.sources"
}

stage_packages() {
  log "apt-get update + install ${#SID_PACKAGES[@]} packages (~1-2 min)"
  local logf="$ROOT/var/log/sfunwind-apt.log"
  in_root apt-get update >"$logf" 2>&1 || die "apt-get update in chroot failed, see $logf"
  in_root apt-get install -y "${SID_PACKAGES[@]}" >>"$logf" 2>&1 ||
    die "apt-get install in chroot failed, see $logf"
  in_root apt-get clean
}

stage_binutils_244() {
  log "fetching trixie binutils 2.44 into $B244"
  local t=/var/lib/sfunwind-trixie
  mkdir -p "$ROOT$t/lists/partial" "$ROOT$t/cache/archives/partial" "$ROOT$t/debs"
  echo "deb $MIRROR trixie main" >"$ROOT$t/sources.list"
  : >"$ROOT$t/status"   # empty dpkg status: candidates come from trixie only
  local opts=(-o Dir::Etc::SourceList="$t/sources.list" -o Dir::Etc::SourceParts=/nonexistent
              -o Dir::State::status="$t/status"
              -o Dir::State::Lists="$t/lists" -o Dir::Cache="$t/cache"
              -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
  local logf="$ROOT/var/log/sfunwind-trixie.log"
  in_root apt-get "${opts[@]}" update >"$logf" 2>&1 || die "trixie apt-get update failed, see $logf"
  rm -f "$ROOT$t/debs/"*.deb
  in_root sh -c "cd $t/debs && apt-get $(printf "'%s' " "${opts[@]}") download $(printf '%s ' "${TRIXIE_BINUTILS[@]}")" \
    >>"$logf" 2>&1 || die "trixie apt-get download failed, see $logf"
  local v
  local debs=("$ROOT$t/debs/"binutils-x86-64-linux-gnu_*.deb)
  v=$(in_root dpkg-deb -f "${debs[0]#"$ROOT"}" Version)
  [[ "$v" == 2.44-* ]] || die "trixie binutils-x86-64-linux-gnu is $v, expected 2.44-*"
  rm -rf "$ROOT$B244"; mkdir -p "$ROOT$B244/bin"
  local deb
  for deb in "$ROOT$t/debs/"*.deb; do
    in_root dpkg -x "${deb#"$ROOT"}" "$B244/root"
  done
  local tool
  for tool in as ld ld.bfd objdump readelf objcopy strip nm ar ranlib; do
    [[ -x "$ROOT$B244/root/usr/bin/x86_64-linux-gnu-$tool" ]] || continue
    cat >"$ROOT$B244/bin/$tool" <<W
#!/bin/sh
# trixie binutils $v wrapper (sfunwind sid-chroot.sh)
LD_LIBRARY_PATH=$B244/root/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
exec $B244/root/usr/bin/x86_64-linux-gnu-$tool "\$@"
W
    chmod 755 "$ROOT$B244/bin/$tool"
  done
  echo "$v" >"$ROOT$B244/VERSION"
}
## END RECIPE

# Compile a tiny C file with each writer inside the chroot and check the
# SFrame version that objdump --sframe reports.
verify_writers() {
  log "verifying SFrame writers"
  in_root bash -euo pipefail -c '
    d=$(mktemp -d); trap "rm -rf $d" EXIT; cd $d
    cat > t.c <<C
__attribute__((noinline)) int leaf(int x) { return x * 3; }
int main(int argc, char **argv) { (void)argv; return leaf(argc) == 3 ? 0 : 1; }
C
    ver() { objdump --sframe "$1" | sed -n "s/^ *Version: *//p" | head -1; }
    fail=0
    check() { # name file want
      local v; v=$(ver "$2" || true)
      if [[ "$v" == "$3"* ]]; then echo "  ok   $1: $v"; else echo "  FAIL $1: got \"$v\", want $3"; fail=1; fi
    }
    gcc -O2 -Wa,--gsframe t.c -o gas247 && check "gas/ld $(as --version | head -1 | awk "{print \$NF}") x86-64" gas247 SFRAME_VERSION_3
    gcc -B/opt/binutils-2.44/bin/ -O2 -Wa,--gsframe t.c -o gas244 && check "gas/ld $(cat /opt/binutils-2.44/VERSION) x86-64" gas244 SFRAME_VERSION_2
    clang-23 -O2 -fuse-ld=lld -Wa,--allow-experimental-sframe -Wa,--gsframe t.c -o clang23 && check "clang-23 x86-64" clang23 SFRAME_VERSION_2
    aarch64-linux-gnu-gcc -O2 -static -Wa,--gsframe t.c -o a64 && check "gas aarch64" a64 SFRAME_VERSION_3
    s390x-linux-gnu-gcc -O2 -static -Wa,--gsframe t.c -o s390 && check "gas s390x" s390 SFRAME_VERSION_3
    qemu-aarch64 ./a64 || { echo "  FAIL qemu-aarch64 run"; fail=1; }
    qemu-s390x ./s390 || { echo "  FAIL qemu-s390x run"; fail=1; }
    exit $fail
  ' >&2 || die "writer verification failed"
}

ensure() {
  mkdir -p "$(dirname "$ROOT")"
  exec 9>"$ROOT.lock"
  flock 9
  local want have=""
  want=$(wanted_hash)
  [[ -f "$ROOT/.sfunwind-stamp" ]] && have=$(cat "$ROOT/.sfunwind-stamp")
  if [[ "$have" == "$want" ]]; then
    do_mounts
    return
  fi
  local t0=$SECONDS
  log "chroot $ROOT missing or out of date (stamp ${have:-none}), building"
  stage_debootstrap
  do_mounts
  stage_config
  stage_packages
  stage_binutils_244
  verify_writers
  echo "$want" >"$ROOT/.sfunwind-stamp"
  log "chroot ready in $((SECONDS - t0)) s"
}

run_cmd() {
  [[ "${1:-}" == -- ]] && shift
  [[ $# -gt 0 ]] || die "usage: $0 run -- CMD..."
  ensure
  local cwd=/ d here
  here=$(pwd -P)
  while read -r d; do
    [[ -n "$d" ]] || continue
    if [[ "$here" == "$d" || "$here" == "$d"/* ]]; then cwd=$here; fi
  done < <(bind_dirs)
  # The lock guards building and mounting only: the command runs without
  # it, or every other `run` would wait for this one to end (the lock's fd
  # would be inherited by the command and its children).
  exec 9>&-
  exec chroot "$ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/sh -c 'cd "$0" && exec "$@"' "$cwd" "$@"
}

case "${1:-}" in
  ensure) ensure ;;
  run) shift; run_cmd "$@" ;;
  shell) ensure; run_cmd -- bash -l ;;
  path) echo "$ROOT" ;;
  umount) do_umount ;;
  remove) do_umount; [[ -e "$ROOT" ]] && remove_root; rm -f "$ROOT.lock" "$ROOT.debootstrap.log"; log "removed $ROOT" ;;
  verify) ensure; verify_writers ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '/^set -euo/d; /^# shellcheck/d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
