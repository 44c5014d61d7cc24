#include "view/server.h"

#include <httplib.h>

#include <cstdio>

#include "core/error.h"
#include "report/history.h"
#include "view/address.h"
#include "view/model_blob.h"
#include "view/web_assets.h"

namespace splat::view {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// A client that sends part of a request and stalls (slowloris) holds a worker until a read has
// waited kReadTimeout; kWorkers connections are served at once and the rest wait for a worker, so
// dozens of stalled connections leave the page's requests a free one. An idle keep-alive
// connection is closed after kKeepAliveTimeoutSeconds (the page polls /info every second).
constexpr int kWorkers = 128;
constexpr std::chrono::seconds kReadTimeout{2}, kWriteTimeout{10};
constexpr time_t kKeepAliveTimeoutSeconds = 2;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

json camera_json(const View& v, const char* split) {
  const Camera& c = v.camera;
  json R = json::array(), t = json::array();
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) R.push_back(c.R[i][j]);
    t.push_back(c.t[i]);
  }
  return {{"name", v.name}, {"split", split}, {"width", c.width}, {"height", c.height},
          {"fx", c.fx},     {"fy", c.fy},     {"cx", c.cx},       {"cy", c.cy},
          {"R", R},         {"t", t}};
}

}  // namespace

ViewServer::ViewServer(const ServeOptions& opts)
    : http_(std::make_unique<httplib::Server>()),
      bind_(unbracketed(opts.bind)),
      hosts_(served_names(bind_)) {
  for (const std::string& name : opts.allowed_hosts) hosts_.insert(host_name(name));
  route();
  http_->new_task_queue = [] { return new httplib::ThreadPool(kWorkers); };
  http_->set_read_timeout(kReadTimeout);
  http_->set_write_timeout(kWriteTimeout);
  http_->set_keep_alive_timeout(kKeepAliveTimeoutSeconds);
  // SO_REUSEADDR alone (httplib's default adds SO_REUSEPORT, which lets a second server share a
  // port that is in use instead of failing).
  http_->set_socket_options([this](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listening_ = sock;
  });
  if (opts.port == 0) {
    port_ = http_->bind_to_any_port(bind_);
  } else if (http_->bind_to_port(bind_, opts.port)) {
    port_ = opts.port;
  }
  if (port_ <= 0)
    throw Error("view: cannot listen on " + url_host(bind_) + ":" + std::to_string(opts.port) +
                " (in use, or not an address of this machine; choose another with --port/--bind)");
  // httplib listens with a backlog of 5 connections: a burst of them (many stalled clients and
  // the page's) would wait for the client's SYN to be resent, a second or more. Listening again
  // sets the backlog (Linux).
  listen(listening_, SOMAXCONN);
  if (!is_loopback(bind_))
    std::fprintf(stderr,
                 "warning: --bind %s serves the model and the dataset's cameras to the network: "
                 "every machine that reaches port %d of this one can fetch them (the default, "
                 "--bind 127.0.0.1, serves this machine only)\n",
                 bind_.c_str(), port_);
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  // stop() acts only on a running server: until it runs, the destructor could not end it.
  while (!http_->is_running()) std::this_thread::yield();
}

ViewServer::~ViewServer() {
  http_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string ViewServer::url() const {
  return "http://" + url_host(bind_) + ":" + std::to_string(port_) + "/";
}

void ViewServer::set_scene(const Dataset* data, const std::array<float, 3>& background) {
  json cameras = json::array();
  if (data) {
    for (const View& v : data->train) cameras.push_back(camera_json(v, "train"));
    for (const View& v : data->test) cameras.push_back(camera_json(v, "test"));
  }
  std::lock_guard lock(mutex_);
  scene_ = {{"background", background}, {"cameras", std::move(cameras)}};
}

void ViewServer::publish(Gaussians model) {
  auto shared = std::make_shared<const Gaussians>(std::move(model));
  std::lock_guard lock(mutex_);
  model_ = std::move(shared);
  ++version_;
}

void ViewServer::set_progress(json progress) {
  std::lock_guard lock(mutex_);
  progress_ = std::move(progress);
}

void ViewServer::set_metrics_file(std::string path) {
  std::lock_guard lock(mutex_);
  metrics_path_ = std::move(path);
}

double ViewServer::seconds_since_poll() const {
  const std::int64_t t = last_poll_ns_.load();
  return t < 0 ? 1e30 : double(now_ns() - t) * 1e-9;
}

std::uint32_t ViewServer::version() const {
  std::lock_guard lock(mutex_);
  return version_;
}

// Encoded outside the lock by the first request that asks for a version at a degree; the last
// one encoded is kept (a page asks for one degree).
std::string ViewServer::model_blob(int max_sh_degree) {
  std::shared_ptr<const Gaussians> model;
  std::uint32_t version;
  {
    std::lock_guard lock(mutex_);
    if (blob_ && blob_version_ == version_ && blob_degree_ == max_sh_degree) return *blob_;
    model = model_;
    version = version_;
  }
  auto blob = std::make_shared<const std::string>(
      encode_model_blob(model ? *model : Gaussians{}, version, max_sh_degree));
  std::lock_guard lock(mutex_);
  if (version >= blob_version_) {
    blob_ = blob;
    blob_version_ = version;
    blob_degree_ = max_sh_degree;
  }
  return *blob;
}

void ViewServer::route() {
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const std::string host = host_name(req.get_header_value("Host"));
    if (hosts_.count(host)) return httplib::Server::HandlerResponse::Unhandled;
    res.status = 403;
    res.set_content("splat view: refused a request for host '" + host +
                        "': this server answers to its own names only (a defence against DNS "
                        "rebinding); --allow-host NAME adds a name\n",
                    "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
  for (const WebAsset& a : web_assets()) {
    const std::string path = a.path == "/index.html" ? "/" : std::string(a.path);
    http_->Get(path, [a](const httplib::Request&, httplib::Response& res) {
      res.set_content(a.content.data(), a.content.size(), std::string(a.mime).c_str());
    });
  }
  http_->Get("/info", [this](const httplib::Request&, httplib::Response& res) {
    last_poll_ns_ = now_ns();
    json info;
    {
      std::lock_guard lock(mutex_);
      info = {{"version", version_},
              {"splats", model_ ? model_->size() : 0},
              {"sh_degree", model_ ? model_->sh_degree : 0},
              {"live", !progress_.is_null()},
              {"progress", progress_}};
    }
    res.set_content(info.dump(), "application/json");
  });
  http_->Get("/scene", [this](const httplib::Request&, httplib::Response& res) {
    std::lock_guard lock(mutex_);
    res.set_content(scene_.dump(), "application/json");
  });
  http_->Get("/model", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string sh = req.has_param("sh") ? req.get_param_value("sh") : "3";
    if (sh.size() != 1 || sh[0] < '0' || sh[0] > '3') {
      res.status = 400;
      res.set_content("/model: sh=" + sh + " is not an SH degree from 0 to 3", "text/plain");
      return;
    }
    res.set_content(model_blob(sh[0] - '0'), "application/octet-stream");
  });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    std::string path;
    {
      std::lock_guard lock(mutex_);
      path = metrics_path_;
    }
    res.set_content(json(path.empty() ? std::vector<json>{} : read_history(path)).dump(),
                    "application/json");
  });
  // Every response is fresh: the model and progress change while the page is open.
  http_->set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
  });
}

}  // namespace splat::view
