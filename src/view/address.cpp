#include "view/address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

namespace splat::view {

namespace {

// An IPv6 literal in inet_ntop's canonical form; other names unchanged.
std::string canonical(const std::string& name) {
  in6_addr a;
  char text[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET6, name.c_str(), &a) == 1 && inet_ntop(AF_INET6, &a, text, sizeof text))
    return text;
  return name;
}

bool loopback(const sockaddr* sa) {
  if (sa->sa_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr) >> 24) == 127;
  if (sa->sa_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
  }
  return false;
}

// The numeric address of an interface, without an IPv6 zone ("fe80::1%eth0" -> "fe80::1").
std::string numeric(const sockaddr* sa) {
  char text[NI_MAXHOST];
  const socklen_t size = sa->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  if (getnameinfo(sa, size, text, sizeof text, nullptr, 0, NI_NUMERICHOST) != 0) return "";
  std::string s = text;
  return canonical(s.substr(0, s.find('%')));
}

}  // namespace

std::string unbracketed(const std::string& address) {
  if (address.size() >= 2 && address.front() == '[' && address.back() == ']')
    return address.substr(1, address.size() - 2);
  return address;
}

std::string url_host(const std::string& address) {
  if (is_wildcard(address)) return "localhost";
  if (address.find(':') == std::string::npos) return address;
  std::string host = "[";
  for (char c : address) host += c == '%' ? std::string("%25") : std::string(1, c);
  return host + "]";
}

bool is_wildcard(const std::string& address) {
  in_addr a4;
  in6_addr a6;
  if (inet_pton(AF_INET, address.c_str(), &a4) == 1) return a4.s_addr == htonl(INADDR_ANY);
  return inet_pton(AF_INET6, address.c_str(), &a6) == 1 && IN6_IS_ADDR_UNSPECIFIED(&a6);
}

bool is_loopback(const std::string& bind) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (getaddrinfo(bind.c_str(), nullptr, &hints, &list) != 0) return false;
  bool all = list != nullptr;
  for (const addrinfo* a = list; a; a = a->ai_next) all = all && loopback(a->ai_addr);
  freeaddrinfo(list);
  return all;
}

std::string host_name(const std::string& host_header) {
  std::string name = host_header;
  if (!name.empty() && name.front() == '[') {
    name = name.substr(1, name.find(']') - 1);
  } else if (std::count(name.begin(), name.end(), ':') == 1) {
    name.resize(name.find(':'));
  }
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  if (!name.empty() && name.back() == '.') name.pop_back();
  return canonical(name);
}

std::set<std::string> served_names(const std::string& bind) {
  std::set<std::string> names = {"localhost", "127.0.0.1", "::1", host_name(url_host(bind))};
  if (is_loopback(bind)) return names;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) names.insert(host_name(host));
  ifaddrs* list = nullptr;
  if (is_wildcard(bind) && getifaddrs(&list) == 0) {
    for (const ifaddrs* i = list; i; i = i->ifa_next) {
      if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
        continue;
      if (const std::string a = numeric(i->ifa_addr); !a.empty()) names.insert(a);
    }
    freeifaddrs(list);
  }
  return names;
}

}  // namespace splat::view
