// Test-only egress guard (no Envoy counterpart). With MOE_HOST_LOOPBACK_ONLY=1 in the
// environment, which every test harness sets, moe-host never sends a packet off the machine:
//
//  - an upstream connect to an address outside 127.0.0.0/8 and ::1 is refused before the socket
//    connects, and the request fails as a connect failure does (Envoy: an immediate connect
//    error, as an egress firewall rejecting the SYN would cause), counted as
//    moe_host.upstream_cx_non_loopback_refused;
//  - a STRICT_DNS name other than a numeric address or localhost / *.localhost (answered from
//    /etc/hosts or by the resolver itself, RFC 6761) is not resolved at all, since resolving it
//    would query a DNS server: it resolves to no address, counted as
//    moe_host.upstream_dns_non_local_refused. What localhost resolves to still goes through the
//    connect check.
//
// Both counters exist (at 0) from startup when the guard is on, so a harness can tell the guard
// is active and require them to stay 0. Refusals are logged at error level.
#pragma once
#include <string>

struct sockaddr;

namespace moe::upstream_guard {

extern const char* const kEnvVar;             // "MOE_HOST_LOOPBACK_ONLY"
extern const char* const kConnectRefusedStat; // "moe_host.upstream_cx_non_loopback_refused"
extern const char* const kDnsRefusedStat;     // "moe_host.upstream_dns_non_local_refused"

// Whether the guard is on (the environment variable is "1"); read once.
bool enabled();
// Registers the counters and logs that the guard is on. Call once at startup, before clusters
// resolve anything.
void init();
// True when a connect to addr may go ahead. A refusal is logged and counted; host and cluster
// name the attempt in the log line.
bool allowConnect(const sockaddr* addr, const std::string& host, const std::string& cluster);
// True when a name may be passed to the resolver. A refusal is logged and counted.
bool allowResolve(const std::string& name, const std::string& cluster);

} // namespace moe::upstream_guard
