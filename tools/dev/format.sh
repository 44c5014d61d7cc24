#!/usr/bin/env bash
# Applies .clang-format to every tracked C++/CUDA source, or with --check lists the files that
# differ from it and fails (the unit test Format.SourcesAreClangFormatted runs the check).
#   tools/dev/format.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v clang-format >/dev/null || { echo "clang-format is missing: scripts/deps.sh --test installs it" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh')
if [ "${1:-}" = "--check" ]; then
  bad=()
  for f in "${files[@]}"; do
    clang-format --dry-run --Werror "$f" 2>/dev/null || bad+=("$f")
  done
  [ ${#bad[@]} -eq 0 ] && { echo "${#files[@]} files follow .clang-format"; exit 0; }
  printf 'not clang-formatted: %s\n' "${bad[@]}" >&2
  echo "run tools/dev/format.sh to format them" >&2
  exit 1
fi
clang-format -i "${files[@]}"
