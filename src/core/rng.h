#pragma once
// PCG32 (O'Neill 2014): small, fast, and its whole state is two words, so a checkpoint can carry it
// and a resumed run draws exactly the numbers the uninterrupted run would have drawn.
#include <cstdint>
#include <vector>

namespace splat {

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0, std::uint64_t stream = 0x853c49e6748fea9bULL)
      : inc_((stream << 1u) | 1u) {
    next_u32();
    state_ += seed;
    next_u32();
  }
  std::uint32_t next_u32() {
    const std::uint64_t old = state_;
    state_ = old * 6364136223846793005ULL + inc_;
    const std::uint32_t xorshifted = std::uint32_t(((old >> 18u) ^ old) >> 27u);
    const std::uint32_t rot = std::uint32_t(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31));
  }
  // Uniform in [0, 1) with 24 random bits.
  float uniform() { return float(next_u32() >> 8) * (1.0f / 16777216.0f); }
  // Uniform integer in [0, n), n > 0 (rejection sampling: no modulo bias).
  std::uint32_t below(std::uint32_t n) {
    const std::uint32_t threshold = (-n) % n;
    for (;;) {
      const std::uint32_t r = next_u32();
      if (r >= threshold) return r % n;
    }
  }
  std::vector<std::uint64_t> save() const { return {state_, inc_}; }
  void restore(const std::vector<std::uint64_t>& s) { state_ = s.at(0), inc_ = s.at(1); }

 private:
  std::uint64_t state_ = 0, inc_;
};

}  // namespace splat
