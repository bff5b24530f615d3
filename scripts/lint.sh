#!/usr/bin/env bash
# lint.sh: clang-tidy (the checks in .clang-tidy) and cppcheck over the C++
# sources, using the default build's compile_commands.json. Exit 1 on any
# finding. Usage: scripts/lint.sh [FILE...]  (default: every project source)
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo" || exit 2
db=build/default/compile_commands.json
[[ -f $db ]] || { cmake --preset default >/dev/null || exit 2; }
if (($#)); then
  files=("$@")
else
  mapfile -t files < <(git ls-files 'core/*.cpp' 'cli/*.cpp' 'plugin/*.cpp' 'gdb-python/*.cpp')
fi
# clang-tidy reads the build's command lines, but not GCC's precompiled
# headers (the unit tests' Catch2 header): its database leaves them out.
mkdir -p build/lint
python3 - "$db" build/lint/compile_commands.json <<'PY' || exit 2
import json, re, sys
commands = json.load(open(sys.argv[1]))
for c in commands:
    c["command"] = re.sub(r" -Winvalid-pch -include \S+/cmake_pch\.hxx", "", c["command"])
json.dump(commands, open(sys.argv[2], "w"))
PY
status=0
tidy_out=$(printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 4 clang-tidy -p build/lint --quiet \
             --extra-arg=-Wno-unknown-warning-option 2>/dev/null | grep -E '(warning|error):' | sort -u)
if [[ -n $tidy_out ]]; then
  echo "$tidy_out"
  echo "clang-tidy: $(wc -l <<<"$tidy_out") finding(s)"
  status=1
else
  echo "clang-tidy: clean (${#files[@]} files)"
fi
if ! cppcheck --quiet --error-exitcode=1 --std=c++20 --language=c++ --inline-suppr \
       --enable=warning,performance,portability --suppress=missingIncludeSystem \
       -I core/include "${files[@]}"; then
  echo "cppcheck: findings above"
  status=1
else
  echo "cppcheck: clean"
fi
exit $status
