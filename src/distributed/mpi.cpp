// The MPI communicator. Every collective is non-blocking (MPI-3) and waited for by polling, so a
// collective that another rank never joins (it failed, or hangs) ends the job after the timeout
// with the collective's name, instead of blocking forever.
#include "distributed/mpi.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/error.h"

#if SPLAT_HAVE_MPI
#include <mpi.h>
#endif

namespace splat::dist {

#if SPLAT_HAVE_MPI

namespace {

template <class T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() {
  return MPI_FLOAT;
}
template <>
MPI_Datatype mpi_type<double>() {
  return MPI_DOUBLE;
}
template <>
MPI_Datatype mpi_type<std::int32_t>() {
  return MPI_INT32_T;
}

// MPI's message for an error code, with the call that returned it.
std::string mpi_error(int code, const char* call) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(call) + ": " + std::string(text, std::size_t(len));
}

// Throws splat::Error naming the collective (`what`) and the MPI call unless rc is MPI_SUCCESS.
void check(int rc, const char* call, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(std::string(what) + ": " + mpi_error(rc, call));
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(int& argc, char**& argv) {
    int provided = 0;
    // Funneled: only the main thread calls MPI (OpenMP threads never do).
    check(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread",
          "MPI initialization");
    // Errors come back as codes, so they reach the caller as splat::Error with the collective's
    // name.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // Test hook: SPLAT_TEST_FAULT=stall:R:K makes rank R stop for good at its K-th collective
    // (0-based), as a hung rank would; throw:R:K makes it fail there with an error.
    if (const char* v = std::getenv("SPLAT_TEST_FAULT")) {
      char kind[16] = {};
      if (std::sscanf(v, "%15[a-z]:%d:%lld", kind, &fault_rank_, &fault_at_) != 3 ||
          (std::string(kind) != "stall" && std::string(kind) != "throw"))
        throw Error(std::string("SPLAT_TEST_FAULT = '") + v +
                    "': expected stall:RANK:INDEX or throw:RANK:INDEX");
      fault_stalls_ = std::string(kind) == "stall";
    }
  }
  ~MpiCommunicator() override { MPI_Finalize(); }

  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allreduce_sum(std::span<float> d, const char* what) override { allreduce(d, what); }
  void allreduce_sum(std::span<double> d, const char* what) override { allreduce(d, what); }
  void allreduce_sum(std::span<std::int32_t> d, const char* what) override { allreduce(d, what); }

  void broadcast(std::span<std::byte> data, int root, const char* what) override {
    in_chunks(
        data.size(),
        [&](std::size_t off, int n, MPI_Request* req) {
          return MPI_Ibcast(data.data() + off, n, MPI_BYTE, root, MPI_COMM_WORLD, req);
        },
        what);
  }

  std::vector<std::uint64_t> allgather(std::uint64_t value, const char* what) override {
    std::vector<std::uint64_t> all(static_cast<std::size_t>(size_), 0);
    MPI_Request req;
    check(
        MPI_Iallgather(&value, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD, &req),
        "MPI_Iallgather", what);
    wait(req, what);
    return all;
  }

  void set_timeout(double seconds) override { timeout_s_ = seconds; }

  [[noreturn]] void abort(const std::string& message) override {
    std::fprintf(stderr, "\nrank %d of %d: %s\n(stopping all %d ranks)\n", rank_, size_,
                 message.c_str(), size_);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);  // MPI_Abort does not return; this keeps the promise if it ever did
  }

 private:
  template <class T>
  void allreduce(std::span<T> d, const char* what) {
    in_chunks(
        d.size(),
        [&](std::size_t off, int n, MPI_Request* req) {
          return MPI_Iallreduce(MPI_IN_PLACE, d.data() + off, n, mpi_type<T>(), MPI_SUM,
                                MPI_COMM_WORLD, req);
        },
        what);
  }

  // MPI counts are int: a large buffer is several collectives. start(offset, count, request)
  // starts one and returns its MPI error code.
  template <class Start>
  void in_chunks(std::size_t total, Start&& start, const char* what) {
    constexpr std::size_t kChunk = std::size_t(1) << 30;
    for (std::size_t off = 0; off < total; off += kChunk) {
      MPI_Request req;
      check(start(off, int(std::min(kChunk, total - off)), &req), "starting the collective", what);
      wait(req, what);
    }
  }

  // Polls until the request completes; past the timeout the job ends, naming the collective.
  void wait(MPI_Request& req, const char* what) {
    if (rank_ == fault_rank_ && collectives_++ == fault_at_) {
      if (!fault_stalls_) throw Error(std::string(what) + ": injected fault (SPLAT_TEST_FAULT)");
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    const auto start = std::chrono::steady_clock::now();
    for (int polls = 0;; ++polls) {
      int done = 0;
      check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test", what);
      if (done) return;
      // Spin briefly (a collective of ranks in step is fast), then yield the core: ranks may
      // outnumber cores.
      if (polls < 1000) continue;
      std::this_thread::sleep_for(std::chrono::microseconds(polls < 10000 ? 10 : 200));
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (timeout_s_ > 0 && waited > timeout_s_) {
        char msg[256];
        std::snprintf(msg, sizeof msg,
                      "collective '%s' did not complete within train.collective_timeout = %g s "
                      "(another rank failed or hangs)",
                      what, timeout_s_);
        abort(std::string("error: ") + msg);
      }
    }
  }

  int rank_ = 0, size_ = 1;
  double timeout_s_ = 300;
  int fault_rank_ = -1;
  long long fault_at_ = -1, collectives_ = 0;
  bool fault_stalls_ = false;
};

}  // namespace

bool have_mpi() {
  return true;
}

std::unique_ptr<Communicator> make_mpi_communicator(int& argc, char**& argv) {
  return std::make_unique<MpiCommunicator>(argc, argv);
}

#else

bool have_mpi() {
  return false;
}

std::unique_ptr<Communicator> make_mpi_communicator(int&, char**&) {
  throw Error(
      "this process was launched as one of " + std::to_string(launcher_size()) +
      " MPI ranks, but this build of splat has no MPI (install libopenmpi-dev and reconfigure; "
      "CMake then builds with SPLAT_MPI)");
}

#endif

}  // namespace splat::dist
