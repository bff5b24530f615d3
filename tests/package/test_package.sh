#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian package, tested as installed (issue 13): builds it with CPack
# from a built tree, checks its metadata and that `cmake --install --prefix
# /usr` installs the same files, then installs it with apt in two throw-away
# roots and debugs the -noeh fixtures there with plain `gdb PROG CORE` and
# `lldb PROG -c CORE` (tests/package/check_installed.py), then removes and
# purges it and checks that none of its files is left:
#   host  Debian 12 (GDB 13, LLDB 19)
#   sid   the sid chroot (GDB 18, LLDB 23), the same .deb
# A throw-away root is an overlay of the root (/, or the chroot) in a mount
# namespace of its own, written to a tmpfs: what apt, dpkg, GDB and LLDB
# write there vanishes with the namespace, and no other process on the
# machine (other test runs, other users of the chroot) ever sees the package
# installed. Needs root (mount namespaces, overlayfs).
#
# usage: test_package.sh [host] [sid]     (default: both)
# Environment: SFUNWIND_PACKAGE_BUILD (the built tree, default build/default).
# Exit status: non-zero when a check failed.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${SFUNWIND_PACKAGE_BUILD:-$repo/build/default}
where=("$@")
((${#where[@]})) || where=(host sid)
# -noeh fixtures per root: a program and one calling into a shared library
# (both with SFrame only), of the SFrame versions each root's writers made.
host_fixtures=(gas-2.40/recurse-O2-nofp-noeh gas-2.40/plt-O2-nofp-noeh/plt)
sid_fixtures=(gas-2.47/recurse-O2-nofp-noeh gas-2.47/plt-O2-nofp-noeh/plt clang-23/recurse-O2-nofp-noeh)

failed=0
fail() { echo "FAIL  $*"; failed=$((failed + 1)); }
ok() { echo "ok    $*"; }

[[ $(id -u) == 0 ]] || { echo "test_package.sh: must run as root (mount namespaces)"; exit 2; }
[[ -f "$build/CPackConfig.cmake" ]] || { echo "test_package.sh: $build is not a configured tree"; exit 2; }
work=$(mktemp -d /tmp/sfunwind-package.XXXXXX)
trap 'rm -rf "$work"' EXIT

t0=$SECONDS
# The shipped binaries only (the package does not need the tests).
cmake --build "$build" --target sfunwind sfunwind_gdb sfunwind_lldb >"$work/build.log" 2>&1 ||
  { cat "$work/build.log"; echo "FAIL  build"; exit 1; }
(cd "$work" && cpack --config "$build/CPackConfig.cmake" -B "$work/deb") >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log"; echo "FAIL  cpack"; exit 1; }
debs=("$work"/deb/sfunwind_*.deb)
deb=${debs[0]}
[[ -f "$deb" ]] || { cat "$work/cpack.log"; echo "FAIL  no .deb written"; exit 1; }
echo "package: $(basename "$deb") ($(stat -c %s "$deb") bytes, $((SECONDS - t0)) s)"

# Metadata: dependencies are Debian packages both roots have; no Capstone
# (its soname differs between them), no build tree.
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in libc6 "libstdc\\+\\+6" libelf1 libdw1; do
  if [[ "$depends" =~ (^|, )$lib( |,|$) ]]; then ok "Depends names $lib"; else fail "Depends lacks $lib: $depends"; fi
done
if [[ "$depends" != *capstone* ]]; then ok "Depends has no Capstone"; else fail "Depends names Capstone: $depends"; fi
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's#^\./#/#' | sort >"$work/deb.list"
for want in /usr/bin/sfunwind /usr/lib/lldb/plugins/libsfunwind_lldb.so /etc/gdb/gdbinit.d/sfunwind.py \
            /usr/include/sfunwind/ /usr/lib/cmake/sfunwind/sfunwindConfig.cmake; do
  if grep -qx -- "$want" "$work/deb.list"; then ok "package has $want"; else fail "package lacks $want"; fi
done
# The GDB package byte-compiled: GDB cannot write bytecode where it is installed.
npyc=$(grep -c '/sfunwind_gdb/__pycache__/[a-z_]*\.cpython-[0-9]*\.pyc$' "$work/deb.list" || true)
npy=$(grep -c '/sfunwind_gdb/[a-z_]*\.py$' "$work/deb.list" || true)
if ((npy > 0 && npyc == npy)); then ok "package has the GDB package byte-compiled ($npyc .pyc for $npy .py)"
else fail "GDB package: $npyc .pyc for $npy .py"; fi
if grep -v '^/usr/\|^/etc/gdb/\|^/$\|^/etc/$' "$work/deb.list" | grep -q .; then
  fail "package files outside /usr and /etc/gdb: $(grep -v '^/usr/\|^/etc/' "$work/deb.list" | tr '\n' ' ')"
fi
# Nothing needs the build tree: no RUNPATH into it, no script naming it.
mkdir -p "$work/debroot" && dpkg-deb -x "$deb" "$work/debroot"
while read -r f; do
  if readelf -d "$f" 2>/dev/null | grep -E 'R(UN)?PATH' | grep -q "$repo"; then fail "$f: RUNPATH into $repo"; fi
done < <(find "$work/debroot" -type f -name '*.so' -o -type f -path '*/bin/*')
if grep -rl --include='*.py' --include='*.cmake' "$repo" "$work/debroot" | grep -q .; then
  fail "files naming the build tree: $(grep -rl --include='*.py' --include='*.cmake' "$repo" "$work/debroot")"
fi

# `cmake --install --prefix /usr --strip` gives the same files with the same bytes.
DESTDIR="$work/destdir" cmake --install "$build" --prefix /usr --strip >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "cmake --install --prefix /usr"; }
(cd "$work/destdir" && find . ! -type d -printf '%p %l\n' -exec sha256sum {} + 2>/dev/null | sort) >"$work/a"
(cd "$work/debroot" && find . ! -type d -printf '%p %l\n' -exec sha256sum {} + 2>/dev/null | sort) >"$work/b"
if cmp -s "$work/a" "$work/b"; then
  ok "cmake --install --prefix /usr --strip installs the package's files ($(grep -c . "$work/a") lines)"
else
  fail "cmake --install --prefix /usr --strip differs from the package:"; diff "$work/a" "$work/b" | head -20
fi

# throwaway NAME LOWER LLDB FIXTURE...: install, check, remove, purge in an
# overlay of LOWER that vanishes with its mount namespace.
throwaway() {
  local name=$1 lower=$2 lldb=$3; shift 3
  local t="$work/$name"
  mkdir -p "$t"
  local t1=$SECONDS
  echo
  echo "=== $name: $(basename "$deb") in a throw-away overlay of $lower"
  # shellcheck disable=SC2016 # expanded by the inner shell
  unshare -m --propagation private -- bash -euo pipefail -c '
    t=$1 lower=$2 repo=$3 deb=$4; shift 4
    mount -t tmpfs sfunwind-package "$t"
    mkdir "$t/upper" "$t/work" "$t/root"
    mount -t overlay overlay -o "lowerdir=$lower,upperdir=$t/upper,workdir=$t/work" "$t/root"
    mount -t proc proc "$t/root/proc"
    mount --rbind /sys "$t/root/sys"
    mount --rbind /dev "$t/root/dev"
    mkdir -p "$t/root$repo" && mount --bind "$repo" "$t/root$repo"
    cp "$deb" "$t/root/tmp/"
    exec chroot "$t/root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
      bash "$repo/tests/package/in_root.sh" "/tmp/$(basename "$deb")" "$@"
  ' inner "$t" "$lower" "$repo" "$deb" "$lldb" "$@" || fail "$name: checks in the installed root"
  echo "=== $name: $((SECONDS - t1)) s"
}

for w in "${where[@]}"; do
  case "$w" in
    host) throwaway host / lldb-19 "${host_fixtures[@]}" ;;
    sid)
      # Only the chroot's files are needed (the overlay mounts its own
      # /proc, /dev and the repository), so an existing chroot is used as it
      # is; `ensure` (which waits for every other `sid-chroot.sh run` to
      # end) only when there is none.
      sid=$("$repo/scripts/sid-chroot.sh" path)
      if [[ ! -f "$sid/.sfunwind-stamp" ]]; then
        "$repo/scripts/sid-chroot.sh" ensure || { fail "sid chroot"; continue; }
      fi
      throwaway sid "$sid" lldb-23 "${sid_fixtures[@]}" ;;
    *) echo "unknown root $w (host, sid)"; exit 2 ;;
  esac
done

echo
echo "package: $failed failed ($((SECONDS - t0)) s)"
((failed == 0))
