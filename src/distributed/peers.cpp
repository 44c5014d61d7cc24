#include "distributed/peers.h"

#include <sys/wait.h>

#include <utility>

namespace splat::dist {

std::string failed_peer(const std::vector<int>& pids) {
  for (const int pid : pids) {
    siginfo_t info{};
    if (waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != pid)
      continue;
    const std::string who = "the rank in process " + std::to_string(pid);
    if (info.si_code == CLD_EXITED) {
      if (info.si_status != 0) return who + " exited with status " + std::to_string(info.si_status);
    } else {  // CLD_KILLED, CLD_DUMPED
      return who + " was killed by signal " + std::to_string(info.si_status);
    }
  }
  return {};
}

PeerWatch::PeerWatch(std::vector<int> pids,
                     std::function<void(const std::string&)> on_failure,
                     std::chrono::milliseconds period)
    : thread_([this, pids = std::move(pids), on_failure = std::move(on_failure), period] {
        std::unique_lock lock(mutex_);
        while (!wake_.wait_for(lock, period, [this] { return stop_; })) {
          if (std::string failure = failed_peer(pids); !failure.empty()) {
            lock.unlock();
            on_failure(failure);
            return;
          }
        }
      }) {}

PeerWatch::~PeerWatch() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

}  // namespace splat::dist
