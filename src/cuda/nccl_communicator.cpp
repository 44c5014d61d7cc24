// NCCL behind dist::Communicator (cuda/nccl.h). The library is opened with dlopen: nccl.h gives
// the types and signatures, the functions come from libnccl.so.2 at run time.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/nccl.h"
#include "distributed/peers.h"

namespace splat::dist {
namespace {

// The NCCL entry points this file uses, resolved once.
struct Nccl {
  decltype(&ncclGetUniqueId) get_unique_id;
  decltype(&ncclCommInitRank) comm_init_rank;
  decltype(&ncclCommDestroy) comm_destroy;
  decltype(&ncclCommAbort) comm_abort;
  decltype(&ncclCommGetAsyncError) comm_get_async_error;
  decltype(&ncclGetErrorString) get_error_string;
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclBroadcast) broadcast;
  decltype(&ncclAllGather) all_gather;

  static const Nccl& get() {
    static const Nccl nccl = load();
    return nccl;
  }

 private:
  static Nccl load() {
    void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL);
    if (!lib)
      throw Error(
          std::string("cannot load NCCL (libnccl.so.2, part of the CUDA toolkit; is its lib64 on "
                      "LD_LIBRARY_PATH?): ") +
          dlerror());
    auto sym = [&](const char* name) {
      void* f = dlsym(lib, name);
      if (!f) throw Error(std::string("libnccl.so.2 has no ") + name);
      return f;
    };
    Nccl n;
    n.get_unique_id = reinterpret_cast<decltype(n.get_unique_id)>(sym("ncclGetUniqueId"));
    n.comm_init_rank = reinterpret_cast<decltype(n.comm_init_rank)>(sym("ncclCommInitRank"));
    n.comm_destroy = reinterpret_cast<decltype(n.comm_destroy)>(sym("ncclCommDestroy"));
    n.comm_abort = reinterpret_cast<decltype(n.comm_abort)>(sym("ncclCommAbort"));
    n.comm_get_async_error =
        reinterpret_cast<decltype(n.comm_get_async_error)>(sym("ncclCommGetAsyncError"));
    n.get_error_string = reinterpret_cast<decltype(n.get_error_string)>(sym("ncclGetErrorString"));
    n.all_reduce = reinterpret_cast<decltype(n.all_reduce)>(sym("ncclAllReduce"));
    n.broadcast = reinterpret_cast<decltype(n.broadcast)>(sym("ncclBroadcast"));
    n.all_gather = reinterpret_cast<decltype(n.all_gather)>(sym("ncclAllGather"));
    return n;
  }
};

void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess && r != ncclInProgress)
    throw Error(std::string(what) + ": NCCL error: " + Nccl::get().get_error_string(r));
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(int rank, int size, const ncclUniqueId& id, int device, std::vector<int> peers)
      : rank_(rank), size_(size), peers_(std::move(peers)) {
    disable_nvlink_multicast();
    int devices = 0;
    SPLAT_CUDA_CHECK(cudaGetDeviceCount(&devices));
    if (device >= devices)
      throw Error("rank " + std::to_string(rank) + " of " + std::to_string(size) +
                  " needs CUDA device " + std::to_string(device) + ", but this machine has " +
                  std::to_string(devices));
    SPLAT_CUDA_CHECK(cudaSetDevice(device));
    SPLAT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    check(Nccl::get().comm_init_rank(&comm_, size, id, rank), "ncclCommInitRank");
    // Rank 0 watches the ranks it started: one that fails ends the job even while this rank
    // waits inside a step's collective on the GPU (ranks 1 .. N-1 die with rank 0,
    // app/launch.cpp).
    if (!peers_.empty())
      watch_ = std::make_unique<PeerWatch>(
          peers_, [this](const std::string& failed) { abort("error: " + failed); });
  }
  ~NcclCommunicator() override {
    // The destroy waits for every rank's; the watch stays on meanwhile, for a rank that dies first.
    closing_ = true;
    if (comm_) Nccl::get().comm_destroy(comm_);
    watch_.reset();
    if (staging_) cudaFree(staging_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool reduces_device_buffers() const override { return true; }

  void allreduce_sum(std::span<float> d, const char* what) override {
    host_allreduce(d, ncclFloat32, what);
  }
  void allreduce_sum(std::span<double> d, const char* what) override {
    host_allreduce(d, ncclFloat64, what);
  }
  void allreduce_sum(std::span<std::int32_t> d, const char* what) override {
    host_allreduce(d, ncclInt32, what);
  }

  void allreduce_sum_device(float* data,
                            std::size_t count,
                            cudaStream_t stream,
                            const char* what) override {
    check(Nccl::get().all_reduce(data, data, count, ncclFloat32, ncclSum, comm_, stream), what);
  }
  void allreduce_sum_device(std::int32_t* data,
                            std::size_t count,
                            cudaStream_t stream,
                            const char* what) override {
    check(Nccl::get().all_reduce(data, data, count, ncclInt32, ncclSum, comm_, stream), what);
  }

  void broadcast(std::span<std::byte> data, int root, const char* what) override {
    void* dev = stage(data.size());
    SPLAT_CUDA_CHECK(
        cudaMemcpyAsync(dev, data.data(), data.size(), cudaMemcpyHostToDevice, stream_));
    check(Nccl::get().broadcast(dev, dev, data.size(), ncclUint8, root, comm_, stream_), what);
    SPLAT_CUDA_CHECK(
        cudaMemcpyAsync(data.data(), dev, data.size(), cudaMemcpyDeviceToHost, stream_));
    wait(what);
  }

  std::vector<std::uint64_t> allgather(std::uint64_t value, const char* what) override {
    std::vector<std::uint64_t> out(static_cast<std::size_t>(size_));
    auto* dev = static_cast<std::uint64_t*>(stage(out.size() * sizeof(std::uint64_t)));
    SPLAT_CUDA_CHECK(
        cudaMemcpyAsync(dev + rank_, &value, sizeof value, cudaMemcpyHostToDevice, stream_));
    check(Nccl::get().all_gather(dev + rank_, dev, 1, ncclUint64, comm_, stream_), what);
    SPLAT_CUDA_CHECK(cudaMemcpyAsync(out.data(), dev, out.size() * sizeof(std::uint64_t),
                                     cudaMemcpyDeviceToHost, stream_));
    wait(what);
    return out;
  }

  void set_timeout(double seconds) override { timeout_s_ = seconds; }

  [[noreturn]] void abort(const std::string& message) override {
    std::fprintf(stderr, "\nrank %d of %d: %s\n", rank_, size_, message.c_str());
    std::fflush(stderr);
    if (comm_ && !closing_) Nccl::get().comm_abort(comm_);  // an abort waits for the others too
    std::_Exit(1);
  }

 private:
  template <class T>
  void host_allreduce(std::span<T> d, ncclDataType_t type, const char* what) {
    void* dev = stage(d.size_bytes());
    SPLAT_CUDA_CHECK(
        cudaMemcpyAsync(dev, d.data(), d.size_bytes(), cudaMemcpyHostToDevice, stream_));
    check(Nccl::get().all_reduce(dev, dev, d.size(), type, ncclSum, comm_, stream_), what);
    SPLAT_CUDA_CHECK(
        cudaMemcpyAsync(d.data(), dev, d.size_bytes(), cudaMemcpyDeviceToHost, stream_));
    wait(what);
  }

  void* stage(std::size_t bytes) {
    if (bytes > staging_bytes_) {
      if (staging_) SPLAT_CUDA_CHECK(cudaFree(staging_));
      SPLAT_CUDA_CHECK(cudaMalloc(&staging_, bytes));
      staging_bytes_ = bytes;
    }
    return staging_;
  }

  // Polls the host collective's stream: done, an NCCL error, a peer process gone, or the timeout.
  void wait(const char* what) {
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const cudaError_t q = cudaStreamQuery(stream_);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) SPLAT_CUDA_CHECK(q);
      ncclResult_t async = ncclSuccess;
      Nccl::get().comm_get_async_error(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress)
        abort(std::string("error: collective '") + what +
              "' failed: " + Nccl::get().get_error_string(async));
      if (const std::string failed = failed_peer(peers_); !failed.empty())
        abort(std::string("error: collective '") + what + "': " + failed);
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (timeout_s_ > 0 && waited > timeout_s_)
        abort(std::string("error: collective '") + what +
              "' did not complete within train.collective_timeout = " + std::to_string(timeout_s_) +
              " s (another rank failed or hangs)");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  int rank_, size_;
  std::vector<int> peers_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* staging_ = nullptr;
  std::size_t staging_bytes_ = 0;
  double timeout_s_ = 300;
  std::atomic<bool> closing_ = false;  // the destructor runs: abort() leaves comm_ alone
  std::unique_ptr<PeerWatch>
      watch_;  // last: its thread may call abort(), which uses the members above
};

}  // namespace

int cuda_device_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

std::string nccl_unique_id() {
  disable_nvlink_multicast();
  ncclUniqueId id;
  check(Nccl::get().get_unique_id(&id), "ncclGetUniqueId");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (const char c : id.internal) {
    const auto b = static_cast<unsigned char>(c);
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

std::unique_ptr<Communicator> make_nccl_communicator(
    int rank, int size, const std::string& unique_id, int device, std::vector<int> peers) {
  ncclUniqueId id;
  if (unique_id.size() != 2 * sizeof id.internal)
    throw Error("NCCL unique id: " + std::to_string(unique_id.size()) + " hex digits, expected " +
                std::to_string(2 * sizeof id.internal));
  auto nibble = [&](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw Error(std::string("NCCL unique id: '") + c + "' is not a lowercase hex digit");
  };
  for (std::size_t i = 0; i < sizeof id.internal; ++i)
    id.internal[i] = char(nibble(unique_id[2 * i]) * 16 + nibble(unique_id[2 * i + 1]));
  return std::make_unique<NcclCommunicator>(rank, size, id, device, std::move(peers));
}

}  // namespace splat::dist
