#include "upstream_guard.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>

#include "logger.h"
#include "stats.h"

namespace moe::upstream_guard {

const char* const kEnvVar = "MOE_HOST_LOOPBACK_ONLY";
const char* const kConnectRefusedStat = "moe_host.upstream_cx_non_loopback_refused";
const char* const kDnsRefusedStat = "moe_host.upstream_dns_non_local_refused";

namespace {

bool isLoopback(const sockaddr* addr) {
  if (addr == nullptr) return false;
  if (addr->sa_family == AF_INET) {
    uint32_t a = ntohl(reinterpret_cast<const sockaddr_in*>(addr)->sin_addr.s_addr);
    return (a >> 24) == 127; // 127.0.0.0/8
  }
  if (addr->sa_family == AF_INET6) {
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr); // ::1
  }
  return false;
}

bool endsWith(const std::string& s, const char* suffix) {
  size_t n = strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

} // namespace

bool enabled() {
  static const bool on = [] {
    const char* v = getenv(kEnvVar);
    return v != nullptr && strcmp(v, "1") == 0;
  }();
  return on;
}

void init() {
  if (!enabled()) return;
  stats().counter(kConnectRefusedStat);
  stats().counter(kDnsRefusedStat);
  MOE_LOG(Info, "upstream", "%s=1: upstream connects outside 127.0.0.0/8 and ::1 are refused", kEnvVar);
}

bool allowConnect(const sockaddr* addr, const std::string& host, const std::string& cluster) {
  if (!enabled() || isLoopback(addr)) return true;
  stats().counter(kConnectRefusedStat).inc();
  MOE_LOG(Error, "upstream", "%s=1: refused upstream connect to %s (cluster %s): not a loopback address",
          kEnvVar, host.c_str(), cluster.c_str());
  return false;
}

bool allowResolve(const std::string& name, const std::string& cluster) {
  if (!enabled()) return true;
  in6_addr tmp;
  if (inet_pton(AF_INET, name.c_str(), &tmp) == 1 || inet_pton(AF_INET6, name.c_str(), &tmp) == 1) return true;
  std::string lower;
  for (char c : name) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (!lower.empty() && lower.back() == '.') lower.pop_back();
  if (lower == "localhost" || endsWith(lower, ".localhost")) return true;
  stats().counter(kDnsRefusedStat).inc();
  MOE_LOG(Error, "upstream", "%s=1: refused to resolve %s (cluster %s): only numeric addresses and localhost",
          kEnvVar, name.c_str(), cluster.c_str());
  return false;
}

} // namespace moe::upstream_guard
