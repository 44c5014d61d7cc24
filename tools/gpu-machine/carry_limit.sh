# Sourced by build.sh and build_candidates.sh (here, from the repository root): the bytes one part
# may hold. A call carries 64 MiB with the working tree, i.e. the tracked and the untracked, not
# ignored files; 3 MiB are kept spare (for files counted by disk blocks, say).
part_budget() {
  local tree
  tree=$(git ls-files -z --cached --others --exclude-standard | xargs -0 stat -c %s 2>/dev/null |
    awk '{s += $1} END {print s + 0}')
  echo $((64 * 1048576 - tree - 3 * 1048576))
}
