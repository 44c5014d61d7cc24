#pragma once
// The processes of the other ranks that `splat train --gpus N` starts (app/launch.h), watched
// by rank 0. A GPU collective inside a training step waits on the device with no timeout of its
// own: without a watch, a rank that dies in the middle of a step would leave the others blocked.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace splat::dist {

// The first of `pids` that has exited with a non-zero status or was killed, described ("the rank
// in process 123 exited with status 3", "... was killed by signal 9"); empty if none has. A clean
// exit is not a failure. Looks without reaping (WNOWAIT): finish_gpus still collects the statuses.
std::string failed_peer(const std::vector<int>& pids);

// Calls on_failure(failed_peer(pids)) from a background thread once a peer has failed, checking
// every `period`; at most once. The destructor stops the thread.
class PeerWatch {
 public:
  PeerWatch(std::vector<int> pids,
            std::function<void(const std::string&)> on_failure,
            std::chrono::milliseconds period = std::chrono::milliseconds(100));
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace splat::dist
