#pragma once
// The viewer's addresses: the URL it prints, whether its bind address keeps it on this machine,
// and the names a request's Host header may carry. A page on another site that reaches a local
// viewer by DNS rebinding (its name re-resolved to 127.0.0.1) still sends its own site's name, so
// a server that answers only to its own names is out of that page's reach.
#include <set>
#include <string>

namespace splat::view {

// A bind address without the brackets a URL puts around an IPv6 literal ("[::1]" -> "::1").
std::string unbracketed(const std::string& address);
// The host part of a URL for a bind address: an IPv6 literal in brackets (its zone's '%' as
// "%25"), a wildcard (0.0.0.0, ::) as localhost.
std::string url_host(const std::string& address);
// Whether the address means every interface (0.0.0.0, ::).
bool is_wildcard(const std::string& address);
// Whether every address `bind` resolves to is a loopback one (127.0.0.0/8, ::1).
bool is_loopback(const std::string& bind);
// The name a Host header value names: without its port, brackets and trailing dot, lower-case,
// an IPv6 literal in its canonical form ("[0:0::1]:8080" -> "::1").
std::string host_name(const std::string& host_header);
// The names a server bound to `bind` answers to, in host_name's form: localhost, 127.0.0.1, ::1
// and `bind`; for a bind that is not loopback also this machine's host name and, for a wildcard,
// the addresses of its interfaces.
std::set<std::string> served_names(const std::string& bind);

}  // namespace splat::view
