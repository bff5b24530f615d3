#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/big_program/make.sh: generate and build the big program of the
# benchmarks (bench/big_program/generate.py says what it is made of) with
# the sid chroot's gcc 16 + GNU as/ld 2.47 (-Wa,--gsframe: SFrame v3), and
# its unwind-table twins:
#
#   <out>/sframe/{big,lib1.so,lib2.so}  .sframe only (.eh_frame, .eh_frame_hdr removed)
#   <out>/cfi/{big,lib1.so,lib2.so}     DWARF CFI only (.sframe removed)
#   <out>/both/{big,lib1.so,lib2.so}    as linked: both
#   <out>/host-sframe/, <out>/host-cfi/  the same twins linked to run on the
#       bookworm host (for its GDB 13 and LLDB 19) with the chroot's glibc:
#       its loader by absolute path (PT_INTERP), its libraries by RUNPATH
#
# Each directory holds one program: `big` finds its libraries next to it
# (RUNPATH $ORIGIN). `big` stops in big_leaf, about LEVELS + recursion
# frames deep, with SIGTRAP (`big crash`: SIGSEGV, for a core dump).
#
#   bench/big_program/make.sh [--out DIR] [--functions N] [--units U] [--levels L] [--block-ops K]
#
# Prints the output directory on stdout (the log goes to stderr).
# Default out: /var/cache/sfunwind/big-program (outside the repository; a
# build with the same arguments is reused: the arguments are stamped). Took
# the time it prints for the default 32,000 functions on 2 cores (see the
# README's performance section). Needs root (the chroot).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
OUT=/var/cache/sfunwind/big-program
GEN_ARGS=()
while (($#)); do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --functions|--units|--levels|--block-ops) GEN_ARGS+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '3,25p' "$0"; exit 0 ;;
    *) echo "make.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

log() { printf '[big-program] %s\n' "$*" >&2; }

CHROOT_ROOT=${SFUNWIND_CHROOT:-/var/cache/sfunwind/sid}
CHROOT_ROOT=${CHROOT_ROOT%/}

# host_twins: links <out>/host-{sframe,cfi} from the objects in <out>/obj.
host_twins() {
  SFUNWIND_CHROOT_BINDS="$OUT" "$REPO/scripts/sid-chroot.sh" run -- bash -c '
    set -euo pipefail
    out=$1; root=$2
    cd "$out/src"
    objs() { awk -v t="$1" "\$2 == t { sub(/\\.c\$/, \".o\", \$1); print \"../obj/\" \$1 }" units.txt; }
    mkdir -p ../host-both ../host-sframe ../host-cfi
    host="-Wl,--dynamic-linker=$root/lib64/ld-linux-x86-64.so.2 -Wl,-rpath,\$ORIGIN:$root/usr/lib/x86_64-linux-gnu"
    gcc -shared -Wl,-soname,lib1.so ../obj/leaf.o $(objs lib1) -Wl,-rpath,"$root/usr/lib/x86_64-linux-gnu" -o ../host-both/lib1.so
    gcc -shared -Wl,-soname,lib2.so $(objs lib2) ../host-both/lib1.so -Wl,-rpath,"\$ORIGIN:$root/usr/lib/x86_64-linux-gnu" -o ../host-both/lib2.so
    gcc -pie ../obj/main.o $(objs main) ../host-both/lib2.so ../host-both/lib1.so $host -o ../host-both/big
    for f in big lib1.so lib2.so; do
      objcopy --remove-section=.eh_frame --remove-section=.eh_frame_hdr ../host-both/$f ../host-sframe/$f
      objcopy --remove-section=.sframe ../host-both/$f ../host-cfi/$f
    done
  ' host "$OUT" "$CHROOT_ROOT" >&2
}

stamp="generate.py $(sha256sum "$HERE/generate.py" | cut -c1-16) ${GEN_ARGS[*]:-defaults}"
if [[ -f $OUT/stamp && $(cat "$OUT/stamp") == "$stamp" && -x $OUT/sframe/big ]]; then
  if [[ ! -x $OUT/host-sframe/big ]]; then
    log "linking the host twins"
    host_twins
  fi
  log "up to date: $OUT ($stamp)"
  echo "$OUT"
  exit 0
fi
rm -rf "$OUT"
mkdir -p "$OUT/src" "$OUT/obj" "$OUT/sframe" "$OUT/cfi" "$OUT/both"
python3 "$HERE/generate.py" "$OUT/src" "${GEN_ARGS[@]}"
log "sources: $(wc -l <"$OUT/src/units.txt") units in $OUT/src"

"$REPO/scripts/sid-chroot.sh" ensure >/dev/null
# The build runs in the chroot with $OUT bind-mounted at the same path
# (sid-chroot.sh run mounts the repository; the cache is under /var/cache,
# bound into the chroot with SFUNWIND_CHROOT_BINDS).
t0=$SECONDS
SFUNWIND_CHROOT_BINDS="$OUT" "$REPO/scripts/sid-chroot.sh" run -- bash -c '
  set -euo pipefail
  out=$1; jobs=$(nproc)
  cd "$out/src"
  flags="-O2 -fomit-frame-pointer -fPIC -Wa,--gsframe"
  # Objects in parallel, one make-like pass with xargs.
  cut -d" " -f1 units.txt | xargs -P "$jobs" -I{} sh -c "gcc $flags -c {} -o ../obj/\$(basename {} .c).o"
  gcc $flags -c main.c -o ../obj/main.o
  gcc $flags -c leaf.c -o ../obj/leaf.o
  objs() { awk -v t="$1" "\$2 == t { sub(/\\.c\$/, \".o\", \$1); print \"../obj/\" \$1 }" units.txt; }
  gcc -shared -Wl,-soname,lib1.so ../obj/leaf.o $(objs lib1) -o ../both/lib1.so
  gcc -shared -Wl,-soname,lib2.so $(objs lib2) ../both/lib1.so -Wl,-rpath,"\$ORIGIN" -o ../both/lib2.so
  gcc -pie ../obj/main.o $(objs main) ../both/lib2.so ../both/lib1.so -Wl,-rpath,"\$ORIGIN" -o ../both/big
  for f in big lib1.so lib2.so; do
    objcopy --remove-section=.eh_frame --remove-section=.eh_frame_hdr ../both/$f ../sframe/$f
    objcopy --remove-section=.sframe ../both/$f ../cfi/$f
  done
' build "$OUT" >&2
host_twins
log "built in $((SECONDS - t0)) s"
for d in both sframe cfi; do
  size -A "$OUT/$d/big" | awk -v d="$d" '$1 == ".text" || $1 == ".sframe" || $1 == ".eh_frame" { printf "[big-program] %s/big %s: %.1f MB\n", d, $1, $2 / 1048576 }' >&2
done
echo "$stamp" >"$OUT/stamp"
echo "$OUT"
