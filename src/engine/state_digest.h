#pragma once
// The digest of a training state that the ranks of a data-parallel job compare
// (dist::expect_identical): the sum mod 2^64 of one term per 64-bit word (two floats) of the
// parameters and both Adam moments. A sum has no order, so a GPU adds the terms in any order and
// exactly (cuda/digest.cu) and gets the host's value (state_digest below); a changed word changes
// its term (mix64 is a bijection), and so the sum.
#include <cstdint>

#include "engine/hd.h"

namespace splat {

struct TrainState;

// splitmix64's finalizer: a bijection of 64-bit words that spreads every input bit.
SPLAT_HD inline std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The term of word `index` of the state. A group of n floats has ceil(n / 2) words: floats 2i
// (low half) and 2i + 1 (high half, 0 past the end); words are numbered through the groups of
// params, adam_m and adam_v in for_each_group order, then (when present) the appearance
// transforms and their two moments.
SPLAT_HD inline std::uint64_t digest_term(std::uint64_t word, std::uint64_t index) {
  return mix64(word ^ mix64(index));
}

// The digest from the terms' sum, the number of words, the SH degree and the Adam step.
inline std::uint64_t digest_finish(std::uint64_t sum,
                                   std::uint64_t words,
                                   int sh_degree,
                                   std::int64_t adam_step) {
  return mix64(sum ^
               mix64(words ^ mix64(std::uint64_t(adam_step) ^ (std::uint64_t(sh_degree) << 56))));
}

// The digest of a state on the host.
std::uint64_t state_digest(const TrainState& state);

}  // namespace splat
