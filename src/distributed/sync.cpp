#include "distributed/sync.h"

#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "engine/state_digest.h"

namespace splat::dist {

namespace {

// FNV-1a over 64-bit words, then a final avalanche (splitmix64's): any flipped bit changes the
// result.
struct Hasher {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  void word(std::uint64_t w) { h = (h ^ w) * 0x100000001b3ULL; }
  void bytes(const void* p, std::size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, c + i, 8);
      word(w);
    }
    std::uint64_t tail = 0;
    std::memcpy(&tail, c + i, n - i);
    word(tail ^ (std::uint64_t(n) << 56));
  }
  std::uint64_t finish() const { return mix64(h); }
};

std::string hex(std::uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::uint64_t digest(std::string_view text) {
  Hasher h;
  h.bytes(text.data(), text.size());
  return h.finish();
}

void expect_identical(Communicator& comm, std::uint64_t d, const std::string& what) {
  const std::vector<std::uint64_t> all = comm.allgather(d, what.c_str());
  std::string differ;
  for (std::size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      differ += (differ.empty() ? "" : ", ") + ("rank " + std::to_string(r) + " " + hex(all[r]));
  if (!differ.empty())
    throw Error("ranks diverged: " + what + " differs from rank 0's (" + hex(all[0]) + ") on " +
                differ);
}

void allreduce_sum(Communicator& comm, Gaussians& grads, const char* what) {
  grads.for_each_group(
      [&](const char*, std::vector<float>& v) { comm.allreduce_sum(std::span<float>(v), what); });
}

void broadcast_state(Communicator& comm, TrainState& st, int root) {
  if (comm.size() == 1) return;
  std::int64_t header[5] = {std::int64_t(st.params.size()), st.params.sh_degree, st.adam_step,
                            std::int64_t(st.filter3d.size()),
                            std::int64_t(st.appearance.params.size())};
  comm.broadcast(std::as_writable_bytes(std::span(header)), root, "broadcast of the initial state");
  for (Gaussians* g : {&st.params, &st.adam_m, &st.adam_v}) {
    g->sh_degree = int(header[1]);
    g->resize(std::size_t(header[0]));
    g->for_each_group([&](const char*, std::vector<float>& v) {
      comm.broadcast(std::as_writable_bytes(std::span(v)), root, "broadcast of the initial state");
    });
  }
  st.adam_step = header[2];
  st.filter3d.resize(std::size_t(header[3]));
  if (!st.filter3d.empty())
    comm.broadcast(std::as_writable_bytes(std::span(st.filter3d)), root,
                   "broadcast of the initial state (3D filter)");
  for (std::vector<float>* v : {&st.appearance.params, &st.appearance.m, &st.appearance.v}) {
    v->resize(std::size_t(header[4]));
    if (!v->empty())
      comm.broadcast(std::as_writable_bytes(std::span(*v)), root,
                     "broadcast of the initial state (appearance)");
  }
}

}  // namespace splat::dist
