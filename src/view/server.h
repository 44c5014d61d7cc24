#pragma once
// The viewer's HTTP server: the page compiled into the binary (web/), the model as the page
// decodes it (model_blob.h), the dataset's cameras and, during training, snapshots of the model
// with the progress and curves of metrics.jsonl. The page polls GET /info and fetches /model
// again when the snapshot version there has advanced.
//   GET /                 index.html (and /<file> for the other files of web/)
//   GET /info             {"version", "splats", "sh_degree", "live", "progress"}
//   GET /scene            {"background": [r, g, b], "cameras": [{"name", "split", "width",
//                         "height", "fx", "fy", "cx", "cy", "R" (9, row-major), "t" (3)}, ...]}
//   GET /model[?sh=D]     the latest snapshot (model_blob.h); its version is in the header. Its SH
//                         coefficients go up to degree D (0-3; default 3), or the model's if lower
//                         (or the highest band that is not all zeros)
//   GET /metrics          metrics.jsonl's records as one JSON array ([] when there is none)
// A request whose Host header names another server is refused (403): see address.h.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/gaussians.h"
#include "io/dataset.h"

namespace httplib {
class Server;
}

namespace splat::view {

struct ServeOptions {
  std::string bind = "127.0.0.1";  // 0.0.0.0 serves every interface
  int port = 8080;                 // 0: any free port
  // Host header names to answer to beyond those of served_names (address.h), e.g. a DNS name of
  // this machine that its host name is not.
  std::vector<std::string> allowed_hosts = {};
};

class ViewServer {
 public:
  // Binds the port and serves from a thread of its own; throws splat::Error naming the address
  // when the port cannot be bound. Warns (stderr) when the address is not a loopback one.
  explicit ViewServer(const ServeOptions& opts);
  ~ViewServer();
  ViewServer(const ViewServer&) = delete;
  ViewServer& operator=(const ViewServer&) = delete;

  int port() const { return port_; }
  std::string url() const;

  // The dataset's cameras (train and test) and the background the model was trained on.
  void set_scene(const Dataset* data, const std::array<float, 3>& background);
  // A new snapshot: the version the page sees advances.
  void publish(Gaussians model);
  // Training progress shown by the page (live mode): {"step", "total", "splats", ...}.
  void set_progress(nlohmann::json progress);
  void set_metrics_file(std::string path);
  // Seconds since a page last polled /info: a trainer snapshots only while someone watches.
  double seconds_since_poll() const;
  std::uint32_t version() const;

 private:
  void route();
  std::string model_blob(int max_sh_degree);

  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  std::string bind_;
  int port_ = 0;
  int listening_ = -1;           // the listening socket
  std::set<std::string> hosts_;  // the names the Host header may carry

  mutable std::mutex mutex_;
  nlohmann::json scene_ = {{"background", {0, 0, 0}}, {"cameras", nlohmann::json::array()}};
  nlohmann::json progress_;
  std::string metrics_path_;
  std::shared_ptr<const Gaussians> model_;
  std::uint32_t version_ = 0;
  std::shared_ptr<const std::string> blob_;  // model_ encoded, for blob_version_ and blob_degree_
  std::uint32_t blob_version_ = 0;
  int blob_degree_ = -1;
  std::atomic<std::int64_t> last_poll_ns_{-1};
};

}  // namespace splat::view
