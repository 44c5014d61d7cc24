// Abuse of the viewer's server (`splat view`, `splat train --view`): stalled connections, requests
// for another host (DNS rebinding), binds to the network and to IPv6 addresses.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <vector>

#include "io/ply.h"
#include "test_util.h"
#include "view/address.h"
#include "view/server.h"

namespace splat {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A TCP connection to 127.0.0.1:port that has sent `bytes` (or -1 when it could not connect).
int connect_and_send(int port, const std::string& bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(std::uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      send(fd, bytes.data(), bytes.size(), 0) != ssize_t(bytes.size())) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

// Slowloris: 64 connections that each send part of a request and stall. The page's poll of /info
// is still answered at once (before: 30 s later, behind the stalled ones' read timeouts), and the
// server closes each stalled connection after its read timeout.
TEST(BadInputView, StalledConnectionsLeaveInfoAnswered) {
  view::ViewServer server({.port = 0});
  std::vector<int> stalled;
  for (int i = 0; i < 64; ++i) {
    const int fd = connect_and_send(server.port(), "GET /info HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    ASSERT_GE(fd, 0) << "connection " << i;
    stalled.push_back(fd);
  }
  httplib::Client client("127.0.0.1", server.port());
  client.set_read_timeout(5, 0);  // a functional bound: the old server answered after ~30 s
  const auto start = Clock::now();
  const auto info = client.Get("/info");
  ASSERT_TRUE(info) << "no answer to /info within 5 s, 64 stalled connections open";
  EXPECT_EQ(info->status, 200);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));

  for (int fd : stalled) {  // closed by the server (or answered 4xx), not held open
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char c;
    errno = 0;
    const ssize_t n = recv(fd, &c, 1, 0);
    EXPECT_FALSE(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        << "a stalled connection still open after 10 s";
    close(fd);
  }
}

// DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1 sends
// Host: evil.example. Refused on every path; the server's own names are served.
TEST(BadInputView, RequestsForAnotherHostAreRefused) {
  view::ViewServer server({.port = 0, .allowed_hosts = {"Viewer.LAN"}});
  server.publish(Gaussians{});
  httplib::Client client("127.0.0.1", server.port());
  const std::string port = ":" + std::to_string(server.port());
  for (const std::string& host : std::vector<std::string>{
           "evil.example", "evil.example" + port, "localhost.evil.example",
           "127.0.0.1.evil.example", "[::2]" + port, "viewer.lan.evil.example", ""}) {
    for (const char* path : {"/", "/info", "/model", "/scene", "/viewer.js"}) {
      const auto r = client.Get(path, {{"Host", host}});
      ASSERT_TRUE(r) << host << path;
      EXPECT_EQ(r->status, 403) << host << path;
      EXPECT_EQ(r->body.find("\"version\""), std::string::npos) << host << path;
    }
  }
  const auto refused = client.Get("/info", {{"Host", "evil.example" + port}});
  test::expect_contains(refused->body, {"evil.example", "--allow-host"});

  for (const std::string& host : std::vector<std::string>{"127.0.0.1" + port, "localhost" + port,
                                                          "LocalHost.", "[::1]" + port, "[0:0::1]",
                                                          "viewer.lan" + port, "localhost:9999"}) {
    const auto r = client.Get("/info", {{"Host", host}});
    ASSERT_TRUE(r) << host;
    EXPECT_EQ(r->status, 200) << host;
  }
  EXPECT_EQ(client.Get("/info")->status, 200);  // the client's own Host: 127.0.0.1:PORT
}

TEST(BadInputView, HostHeaderNames) {
  EXPECT_EQ(view::host_name("LOCALHOST:8080"), "localhost");
  EXPECT_EQ(view::host_name("example.org."), "example.org");
  EXPECT_EQ(view::host_name("[::1]:8080"), "::1");
  EXPECT_EQ(view::host_name("[0:0:0:0:0:0:0:1]"), "::1");
  EXPECT_EQ(view::host_name("[::1"), "::1");
  EXPECT_EQ(view::host_name(""), "");
  const auto names = view::served_names("127.0.0.1");
  for (const char* name : {"localhost", "127.0.0.1", "::1"}) EXPECT_TRUE(names.count(name)) << name;
  EXPECT_EQ(names.size(), 3u);  // a loopback bind: not this machine's other names
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  const auto wildcard = view::served_names("0.0.0.0");
  EXPECT_TRUE(wildcard.count(view::host_name(host))) << host;
  EXPECT_TRUE(view::served_names("::").count(view::host_name(host))) << host;
}

// --bind to an address other than loopback serves the model to the network: a warning says so.
TEST(BadInputView, NetworkBindWarns) {
  for (const char* bind : {"127.0.0.1", "localhost", "0.0.0.0"}) {
    testing::internal::CaptureStderr();
    { view::ViewServer server({.bind = bind, .port = 0}); }
    const std::string err = testing::internal::GetCapturedStderr();
    if (std::string(bind) == "0.0.0.0") {
      test::expect_contains(err, {"warning: --bind 0.0.0.0", "network"});
    } else {
      EXPECT_EQ(err, "") << bind;
    }
  }
  for (const char* local : {"127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost"})
    EXPECT_TRUE(view::is_loopback(view::unbracketed(local))) << local;
  for (const char* network : {"0.0.0.0", "::", "192.168.1.20", "10.0.0.1", "fe80::1"})
    EXPECT_FALSE(view::is_loopback(network)) << network;
}

// The command itself: `splat view MODEL --bind 0.0.0.0` warns on stderr and still serves (and
// takes --allow-host before MODEL without swallowing it).
TEST(BadInputView, ViewCommandWarnsOnNetworkBind) {
  const fs::path dir = test::temp_dir("bad_view_bind");
  Gaussians one;
  one.sh_degree = 0;
  one.resize(1);  // at the origin, unit scale, opacity 0.5, grey
  one.quats = {1, 0, 0, 0};
  write_ply((dir / "model.ply").string(), one);
  const auto r = test::run_splat(
      "view --allow-host viewer.lan " + (dir / "model.ply").string() + " --bind 0.0.0.0 --port 0",
      3);
  EXPECT_EQ(r.exit_code, 124) << r.output;  // killed by `timeout`: it was serving
  test::expect_contains(r.output, {"warning: --bind 0.0.0.0", "network", "http://localhost:"});
}

// IPv6 literals go into URLs in brackets (http://[::1]:8080/), a wildcard as localhost.
TEST(BadInputView, Ipv6UrlsAreBracketed) {
  EXPECT_EQ(view::url_host("::1"), "[::1]");
  EXPECT_EQ(view::url_host("fe80::1%eth0"), "[fe80::1%25eth0]");
  EXPECT_EQ(view::url_host("::"), "localhost");
  EXPECT_EQ(view::url_host("0.0.0.0"), "localhost");
  EXPECT_EQ(view::url_host("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(view::url_host("localhost"), "localhost");

  std::unique_ptr<view::ViewServer> server;
  try {
    server = std::make_unique<view::ViewServer>(view::ServeOptions{.bind = "::1", .port = 0});
  } catch (const Error& e) {
    GTEST_SKIP() << "no IPv6 loopback here: " << e.what();
  }
  const std::string port = std::to_string(server->port());
  EXPECT_EQ(server->url(), "http://[::1]:" + port + "/");
  httplib::Client client("::1", server->port());
  const auto r = client.Get("/info", {{"Host", "[::1]:" + port}});  // as a browser sends it
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  // "--bind [::1]", the form of the URL, is the same address.
  EXPECT_EQ(view::ViewServer({.bind = "[::1]", .port = 0}).url().substr(0, 13), "http://[::1]:");
}

}  // namespace
}  // namespace splat
