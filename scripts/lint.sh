#!/usr/bin/env bash
# lint.sh: clang-tidy (the checks in .clang-tidy) and cppcheck over the C++
# sources, using the default build's compile_commands.json. Exit 1 on any
# finding. Usage: scripts/lint.sh [FILE...]  (default: every project source)
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
db=build/default/compile_commands.json
[[ -f $db ]] || { cmake --preset default >/dev/null || exit 2; }
if (($#)); then
  files=("$@")
else
  mapfile -t files < <(git ls-files 'core/*.cpp' 'cli/*.cpp' 'plugin/*.cpp' 'gdb-python/*.cpp')
fi
status=0
tidy_out=$(printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 4 clang-tidy -p build/default --quiet \
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
