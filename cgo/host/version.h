// moe-host's version line, in the shape of Envoy's (source/common/version/version_string.cc
// envoyVersionString: "<revision>/<version>/<Clean|Modified>/<RELEASE|DEBUG>/<SSL library>"):
// the git revision moe-host was built from, the Envoy version whose behaviour (and golang-filter
// ABI) it reproduces, whether the tree had local changes, the build type, and "moe-host" where
// Envoy names its TLS library (moe-host has none).
#pragma once
#include <string>

namespace moe {

const std::string& hostVersion();
// The Envoy version moe-host emulates ("1.39.0").
const char* envoyVersion();

} // namespace moe
