// Data-parallel training: the communicator pieces in one process, and real multi-process runs
// under mpirun (2 and 3 ranks on the CPU backend) when the build has MPI.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <deque>
#include <future>

#include "app/launch.h"
#include "core/error.h"
#include "distributed/communicator.h"
#include "distributed/peers.h"
#include "distributed/sync.h"
#include "engine/state_digest.h"
#include "io/checkpoint.h"
#include "test_util.h"
#include "train/backend_factory.h"
#include "train/trainer.h"

namespace splat {
namespace {

// Rank `rank` of a job, played alone: allgather answers with given digests as if from the other
// ranks; a broadcast's root puts its bytes on `wire`, and the other ranks take them off it.
class FakeRanks final : public dist::Communicator {
 public:
  explicit FakeRanks(std::vector<std::uint64_t> others,
                     int rank = 0,
                     std::deque<std::vector<std::byte>>* wire = nullptr)
      : others_(std::move(others)), rank_(rank), wire_(wire) {}
  std::string name() const override { return "fake"; }
  int rank() const override { return rank_; }
  int size() const override { return int(others_.size()) + 1; }
  void allreduce_sum(std::span<float>, const char*) override {}
  void allreduce_sum(std::span<double>, const char*) override {}
  void allreduce_sum(std::span<std::int32_t>, const char*) override {}
  void broadcast(std::span<std::byte> data, int root, const char* what) override {
    if (!wire_) return;
    if (rank_ == root) {
      wire_->emplace_back(data.begin(), data.end());
      return;
    }
    if (wire_->empty() || wire_->front().size() != data.size())
      throw Error(std::string(what) + ": the root sent nothing of this size");
    std::copy(wire_->front().begin(), wire_->front().end(), data.begin());
    wire_->pop_front();
  }
  std::vector<std::uint64_t> allgather(std::uint64_t v, const char*) override {
    std::vector<std::uint64_t> all{v};
    all.insert(all.end(), others_.begin(), others_.end());
    return all;
  }
  void set_timeout(double) override {}
  [[noreturn]] void abort(const std::string& m) override { throw Error(m); }

 private:
  std::vector<std::uint64_t> others_;
  int rank_;
  std::deque<std::vector<std::byte>>* wire_;
};

TrainState small_state() {
  TrainState st;
  for (Gaussians* g : {&st.params, &st.adam_m, &st.adam_v}) {
    g->sh_degree = 1;
    g->resize(5);
    float x = 0.25f;
    g->for_each_group([&](const char*, std::vector<float>& v) {
      for (float& e : v) e = (x += 0.5f);
    });
  }
  st.adam_step = 3;
  return st;
}

TEST(Dist, DigestSeesEveryBitOfTheState) {
  const TrainState st = small_state();
  const std::uint64_t d = state_digest(st);
  EXPECT_EQ(d, state_digest(small_state()));
  TrainState t = st;
  t.adam_v.sh.back() = std::nextafter(t.adam_v.sh.back(), 1e9f);  // one ulp of the last element
  EXPECT_NE(state_digest(t), d);
  t = st;
  t.adam_step = 4;
  EXPECT_NE(state_digest(t), d);
  t = st;
  t.params.means[0] = -t.params.means[0];
  EXPECT_NE(state_digest(t), d);
  t = st;  // the same values in other places (the terms are a sum, the word's index is in each)
  std::swap(t.params.means[0], t.params.means[2]);
  ASSERT_NE(t.params.means[0], st.params.means[0]);
  EXPECT_NE(state_digest(t), d);
}

TEST(Dist, MismatchErrorNamesTheRanks) {
  FakeRanks same({42, 42});
  EXPECT_NO_THROW(dist::expect_identical(same, 42, "the model"));
  FakeRanks differ({42, 7, 42, 9});
  test::expect_contains(
      test::error_of([&] { dist::expect_identical(differ, 42, "the model at iteration 100"); }),
      {"ranks diverged", "the model at iteration 100", "rank 2", "rank 4"});
  EXPECT_EQ(test::error_of([&] { dist::expect_identical(differ, 42, "x"); }).find("rank 1 "),
            std::string::npos);
}

TEST(Dist, SingleProcessIsTheIdentity) {
  dist::Communicator& one = dist::single_process();
  EXPECT_EQ(one.size(), 1);
  EXPECT_EQ(one.rank(), 0);
  std::vector<float> v{1.5f, -2.0f};
  one.allreduce_sum(std::span(v), "test");
  EXPECT_EQ(v, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(one.allgather(5, "test"), std::vector<std::uint64_t>{5});
  TrainState st = small_state();
  dist::broadcast_state(one, st);
  EXPECT_EQ(state_digest(st), state_digest(small_state()));
}

TEST(Dist, HostCommunicatorsRejectDeviceBuffers) {
  FakeRanks two({1});
  test::expect_contains(test::error_of([&] {
                          two.allreduce_sum_device(static_cast<float*>(nullptr), 4, nullptr,
                                                   "gradient all-reduce");
                        }),
                        {"gradient all-reduce", "fake", "host buffers only"});
}

// train.pose_opt trains in one process so far: a job of several ranks is refused naming the key.
TEST(Dist, PoseOptIsRefusedOnSeveralRanks) {
  const Dataset data = load_blender(test::small_demo_scene(), LoadOptions{});
  Config cfg;
  cfg.backend.type = BackendKind::Cpu;
  cfg.train.pose_opt = true;
  cfg.train.batch_size = 2;
  auto backend = make_backend(cfg.backend);
  FakeRanks two({1});
  test::expect_contains(test::error_of([&] { Trainer t(cfg, data, *backend, two); }),
                        {"train.pose_opt = true", "2 ranks"});
}

TEST(Dist, GpuLaunchKeepsNvlinkMulticastOff) {
  unsetenv("NCCL_NVLS_ENABLE");
  EXPECT_NO_THROW(dist::launch_gpus(1));
  for (const char* var :
       {"NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"})
    ASSERT_NE(std::getenv(var), nullptr) << var;
  EXPECT_STREQ(std::getenv("NCCL_NVLS_ENABLE"), "0");
  EXPECT_STREQ(std::getenv("TORCH_SYMM_MEM_DISABLE_MULTICAST"), "1");
  EXPECT_STREQ(std::getenv("NVSHMEM_DISABLE_NVLS"), "1");
}

// mpirun on the cuda backend: rank 0's NCCL unique id reaches the other ranks through the host
// communicator, and every rank takes the GPU of its local rank on its host (the launcher's; the
// rank itself where the launcher does not say).
TEST(Dist, MpiRankTakesTheGpuOfItsLocalRankAndRankZerosNcclId) {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    unsetenv(var);
  std::deque<std::vector<std::byte>> wire;
  int made = 0;
  const auto make_id = [&] {
    ++made;
    return std::string("00ff7a");
  };
  FakeRanks root({1, 1, 1}, 0, &wire);
  const dist::GpuPlace p0 = dist::place_on_gpu(root, make_id, 2);
  EXPECT_EQ(p0.nccl_id, "00ff7a");
  EXPECT_EQ(p0.device, 0);
  EXPECT_EQ(wire.size(), 2u);  // the length, then the id

  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);  // rank 3 of 4: the second rank on the second host
  FakeRanks fourth({1, 1, 1}, 3, &wire);
  const dist::GpuPlace p3 = dist::place_on_gpu(fourth, make_id, 2);
  EXPECT_EQ(p3.nccl_id, "00ff7a");
  EXPECT_EQ(p3.device, 1);
  EXPECT_EQ(made, 1);  // only rank 0 makes the id
  EXPECT_TRUE(wire.empty());

  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2", 1);  // a third rank on a host with two GPUs
  FakeRanks alone({1, 1, 1});
  test::expect_contains(
      test::error_of([&] { dist::place_on_gpu(alone, make_id, 2); }),
      {"rank 0 of 4 is rank 2 on its host", "2 CUDA device(s)", "one rank per GPU"});
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
  FakeRanks silent({1, 1, 1}, 0, &wire);
  EXPECT_EQ(dist::place_on_gpu(silent, make_id, 2).device, 0);  // the rank itself
  test::expect_contains(test::error_of([&] {
                          FakeRanks third({1, 1, 1}, 2, &wire);
                          dist::place_on_gpu(third, make_id, 2);
                        }),
                        {"the launcher gives no local rank"});
}

// Here (no GPU): a build without NCCL says so; one with NCCL finds too few devices. Either way
// the error comes before any rank is started.
TEST(Dist, SeveralGpusWithoutThemIsAClearError) {
  const auto r = test::run_splat("train " + test::small_demo_scene() + " --gpus 2 --out " +
                                 test::temp_dir("gpus").string());
  EXPECT_NE(r.exit_code, 0);
#if SPLAT_HAVE_NCCL
  test::expect_contains(r.output, {"--gpus 2", "this machine has 0 CUDA device(s)"});
#else
  test::expect_contains(r.output, {"--gpus 2", "no NCCL"});
#endif
}

// Child processes standing in for the ranks that --gpus N starts.
pid_t child_exiting_with(int status, int after_ms = 0) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (after_ms > 0) usleep(useconds_t(after_ms) * 1000);
    _exit(status);
  }
  return pid;
}

TEST(Dist, PeerWatchReportsAFailedRankWithoutReapingIt) {
  const pid_t clean = child_exiting_with(0), failing = child_exiting_with(3, 50);
  ASSERT_GT(clean, 0);
  ASSERT_GT(failing, 0);
  std::promise<std::string> failure;
  std::future<std::string> reported = failure.get_future();
  {
    dist::PeerWatch watch(
        {clean, failing}, [&](const std::string& m) { failure.set_value(m); },
        std::chrono::milliseconds(5));
    ASSERT_EQ(reported.wait_for(std::chrono::seconds(20)), std::future_status::ready)
        << "no failure reported";
  }
  test::expect_contains(reported.get(),
                        {"process " + std::to_string(failing), "exited with status 3"});
  // The statuses are still there for finish_gpus.
  int status = 0;
  ASSERT_EQ(waitpid(failing, &status, 0), failing);
  EXPECT_EQ(WEXITSTATUS(status), 3);
  ASSERT_EQ(waitpid(clean, &status, 0), clean);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(Dist, FailedPeerNamesTheSignalAndPassesCleanExits) {
  const pid_t clean = child_exiting_with(0), killed = child_exiting_with(0, 60'000);
  ASSERT_GT(clean, 0);
  ASSERT_GT(killed, 0);
  EXPECT_EQ(dist::failed_peer({killed}), "");  // still running
  ASSERT_EQ(kill(killed, SIGKILL), 0);
  siginfo_t info{};
  for (const pid_t pid : {clean, killed})
    ASSERT_EQ(waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT), 0);
  EXPECT_EQ(dist::failed_peer({clean}), "");
  EXPECT_EQ(dist::failed_peer({clean, killed}),
            "the rank in process " + std::to_string(killed) + " was killed by signal 9");
  int status = 0;
  for (const pid_t pid : {clean, killed}) EXPECT_EQ(waitpid(pid, &status, 0), pid);
}

#if SPLAT_HAVE_MPI

// One small training run on the CPU backend: MCMC with refine ticks inside the run (relocation,
// growth, regularizers and noise all depend on the reduced state), digests every 5 steps.
std::string train_args(const std::filesystem::path& out, const std::string& extra = "") {
  return "train " + test::small_demo_scene() + " --out " + out.string() +
         " --set backend.type=cpu --set backend.threads=1 --set model.init_points=1500"
         " --set train.iterations=16 --set train.batch_size=6 --set train.digest_every=5"
         " --set densify.strategy=mcmc --set densify.refine_start=3 --set densify.refine_every=5"
         " --set output.save_renders=false --set data.test_every=4 " +
         extra;
}

// mpirun as root on a small machine; a wall-clock cap so that a hang fails the test, not CI.
std::string mpirun(int ranks, const std::string& env = "") {
  return "timeout 120 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
         "OMPI_MCA_rmaps_base_oversubscribe=1 " +
         env + " " SPLAT_MPIEXEC " -n " + std::to_string(ranks) + " ";
}

Checkpoint train_once(int ranks, const std::string& name, const std::string& extra = "") {
  const auto out = test::temp_dir(name);
  const std::string args = train_args(out, extra);
  const test::RunResult r = ranks == 1 ? test::run_splat(args)
                                       : test::run_command(mpirun(ranks) + SPLAT_BINARY " " + args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  if (ranks > 1) {
    EXPECT_NE(r.output.find("x " + std::to_string(ranks) + " ranks (mpi)"), std::string::npos)
        << r.output;
  }
  return read_checkpoint((out / "checkpoint.ckpt").string());
}

// R ranks sum their views' gradients in another order than one process does (per-rank partial
// sums, then the all-reduce), so the runs agree to float rounding, not bit for bit. Adam divides by
// sqrt(v) with eps 1e-15, so a rounding-level change of a near-zero gradient can move its element
// by up to the learning rate, and 16 steps with MCMC ticks compound that. Measured ||a-b|| / ||b||:
// parameters 1e-6, Adam m 2.5e-5 (2 and 3 ranks). Bound: 1e-3. Another run of the same config
// with batch 5 instead of 6, or linear instead of sqrt learning-rate scaling, measures 0.26 to
// 1.2; dividing by a rank's own view count instead of B measured 0.19 (2 ranks); a rank that lost
// an all-reduce or drew another random stream stops on a digest mismatch.
TEST(DistMpiSlow, RanksMatchOneProcessWithTheSameBatch) {
  const Checkpoint one = train_once(1, "mpi_single");
  ASSERT_GT(one.params.size(), 1500u);  // MCMC grew the model: refine ticks ran
  for (int ranks : {2, 3}) {
    const Checkpoint many = train_once(ranks, "mpi_" + std::to_string(ranks));
    ASSERT_EQ(many.params.size(), one.params.size()) << ranks << " ranks";
    EXPECT_EQ(many.iteration, one.iteration);
    EXPECT_EQ(many.view_order, one.view_order);
    EXPECT_EQ(many.view_pos, one.view_pos);
    const double d = test::relative_difference(many.params, one.params, nullptr);
    const double dm = test::relative_difference(many.adam_m, one.adam_m, nullptr);
    std::printf("%d ranks vs one process: relative difference of parameters %.3g, Adam m %.3g\n",
                ranks, d, dm);
    EXPECT_LT(d, 1e-3) << ranks << " ranks: parameters differ from one process by " << d;
    EXPECT_LT(dm, 1e-3) << ranks << " ranks: Adam moments differ by " << dm;
  }
}

TEST(DistMpiSlow, AdcDecisionsComeFromTheWholeBatch) {
  // ADC: each rank accumulates the screen-space statistics of its own views; the tick at step 10
  // must decide from their sum over the ranks, or the ranks would split different splats (and
  // stop on a digest mismatch) and differ from one process. Tolerance as above.
  const std::string adc =
      "--set densify.strategy=adc --set densify.grow_grad2d=0.001 --set train.iterations=11";
  const Checkpoint one = train_once(1, "mpi_adc_single", adc);
  ASSERT_GT(one.params.size(), 1500u);  // the tick split splats
  const Checkpoint two = train_once(2, "mpi_adc_2", adc);
  ASSERT_EQ(two.params.size(), one.params.size());
  EXPECT_LT(test::relative_difference(two.params, one.params, nullptr), 1e-3);
}

// A rank that fails: its error, on its rank, then every rank stopped, well before any timeout.
void expect_job_stopped_by_rank_1(const std::string& name,
                                  const std::string& env,
                                  const std::string& args1) {
  const auto out = test::temp_dir(name);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string cmd = mpirun(1, env) + SPLAT_BINARY " " + train_args(out) +
                          " : -n 1 " SPLAT_BINARY " " + train_args(out, args1);
  const test::RunResult r = test::run_command(cmd);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << "the job hung until the test's timeout: " << r.output;
  test::expect_contains(r.output, {"rank 1 of 2: error", "stopping all 2 ranks"});
  EXPECT_LT(seconds, 60.0);  // train.collective_timeout is 300 s: the failing rank ended the job
}

TEST(DistMpiSlow, RankFailingMidTrainingStopsTheJob) {
  // Rank 1 throws in its 30th collective: 19 set the run up (config check, initial state, first
  // digest), then 6 per step (5 gradient groups and the loss), so this is in the second step.
  expect_job_stopped_by_rank_1("mpi_throw", "SPLAT_TEST_FAULT=throw:1:30", "");
}

TEST(DistMpiSlow, RankFailingAtStartStopsTheJob) {
  // Rank 1 rejects its config; rank 0 is already waiting in the first collective.
  expect_job_stopped_by_rank_1("mpi_bad_config", "", "--downscale 1000");
}

// Under mpirun the cuda backend's ranks join NCCL through MPI (dist::gpus_over_mpi). Here, with
// no GPU, every rank says why it cannot, before any collective on a GPU.
TEST(DistMpiSlow, CudaBackendUnderMpirunJoinsNcclOrSaysWhyNot) {
  const auto out = test::temp_dir("mpi_cuda");
  const test::RunResult r =
      test::run_command(mpirun(2) + SPLAT_BINARY " " + train_args(out, "--set backend.type=cuda"));
  EXPECT_NE(r.exit_code, 0) << r.output;
#if SPLAT_HAVE_NCCL
  // Either rank may be the first to report and abort the job; each names its own rank.
  const bool named =
      r.output.find("rank 0 of 2 is rank 0 on its host, which has 0 CUDA device(s)") !=
          std::string::npos ||
      r.output.find("rank 1 of 2 is rank 1 on its host, which has 0 CUDA device(s)") !=
          std::string::npos;
  EXPECT_TRUE(named) << r.output;
#else
  test::expect_contains(r.output, {"MPI job of 2 ranks on the cuda backend", "no NCCL"});
#endif
}

TEST(DistMpiSlow, DifferentConfigsOnTheRanksAreAnError) {
  const auto out = test::temp_dir("mpi_config");
  const std::string cmd = mpirun(1) + SPLAT_BINARY " " + train_args(out) +
                          " : -n 1 " SPLAT_BINARY " " + train_args(out, "--set train.seed=5");
  const test::RunResult r = test::run_command(cmd);
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output, {"ranks diverged", "resolved config", "rank 1"});
}

TEST(DistMpiSlow, StalledRankTimesOutNamingTheCollective) {
  // Rank 1 stops at its 30th collective (in the second step, as above); rank 0 waits
  // out train.collective_timeout and ends the job.
  const auto out = test::temp_dir("mpi_stall");
  const auto t0 = std::chrono::steady_clock::now();
  const test::RunResult r =
      test::run_command(mpirun(2, "SPLAT_TEST_FAULT=stall:1:30") + SPLAT_BINARY " " +
                        train_args(out, "--set train.collective_timeout=5"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << "the job hung until the test's timeout: " << r.output;
  test::expect_contains(
      r.output,
      {"rank 0 of 2", "did not complete within train.collective_timeout = 5 s", "all-reduce"});
  EXPECT_LT(seconds, 60.0);
}

TEST(DistMpiSlow, CheckpointOfTwoRanksResumesOnThreeAndMixedCheckpointsAreAnError) {
  const auto out = test::temp_dir("mpi_resume");
  const std::string first = train_args(out, "--set output.checkpoint_every=8");
  test::RunResult r = test::run_command(mpirun(2) + SPLAT_BINARY " " + first);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(std::filesystem::exists(out / "checkpoint_8.ckpt"));
  const Checkpoint full = read_checkpoint((out / "checkpoint.ckpt").string());
  const auto out3 = test::temp_dir("mpi_resume3");
  r = test::run_command(mpirun(3) + SPLAT_BINARY " train " + test::small_demo_scene() +
                        " --resume " + (out / "checkpoint_8.ckpt").string() + " --out " +
                        out3.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Checkpoint resumed = read_checkpoint((out3 / "checkpoint.ckpt").string());
  ASSERT_EQ(resumed.params.size(), full.params.size());
  EXPECT_EQ(resumed.iteration, full.iteration);
  EXPECT_EQ(resumed.view_pos, full.view_pos);
  EXPECT_LT(test::relative_difference(resumed.params, full.params, nullptr), 1e-3);  // as above

  // Ranks resumed from different checkpoints of the same run agree on the config and start from
  // rank 0's model, but not on the iteration and the view schedule: the first digest says so.
  const std::string resume =
      SPLAT_BINARY " train " + test::small_demo_scene() + " --out " + out3.string() + " --resume ";
  r = test::run_command(mpirun(1) + resume + (out / "checkpoint_8.ckpt").string() + " : -n 1 " +
                        resume + (out / "checkpoint.ckpt").string());
  EXPECT_NE(r.exit_code, 0) << r.output;
  test::expect_contains(r.output,
                        {"ranks diverged", "view schedule", "differs from rank 0's", "rank 1 "});
}

#endif

}  // namespace
}  // namespace splat
