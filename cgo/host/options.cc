#include "options.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "logger.h"
#include "version.h"

namespace moe {
namespace {

// One command-line argument, described as TCLAP describes it (ValueArg, SwitchArg, MultiArg).
struct Arg {
  std::string flag;     // short name without '-' ("c"), or ""
  std::string name;     // long name without "--"
  std::string type;     // "string", "uint32_t"; "" for a switch
  std::string help;
  bool multi = false;
  // Called with the value (switches: ""); returns an error message or "".
  std::function<std::string(const std::string&)> set;
};

bool parseUint32(const std::string& s, uint64_t* out) {
  if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v > UINT32_MAX) return false;
  *out = v;
  return true;
}

// TCLAP's StdOutput::spacePrint: words wrapped at maxWidth, indented, later lines offset.
void spacePrint(std::ostream& os, const std::string& s, int maxWidth, int indentSpaces,
                int secondLineOffset) {
  int len = static_cast<int>(s.length());
  if (len + indentSpaces > maxWidth && maxWidth > 0) {
    int allowedLen = maxWidth - indentSpaces;
    int start = 0;
    while (start < len) {
      int stringLen = std::min(len - start, allowedLen);
      if (stringLen == allowedLen) {
        while (stringLen >= 0 && s[stringLen + start] != ' ' && s[stringLen + start] != ',' &&
               s[stringLen + start] != '|')
          stringLen--;
      }
      if (stringLen <= 0) stringLen = allowedLen;
      for (int i = 0; i < stringLen; i++) {
        if (s[start + i] == '\n') stringLen = i + 1;
      }
      for (int i = 0; i < indentSpaces; i++) os << " ";
      if (start == 0) {
        indentSpaces += secondLineOffset;
        allowedLen -= secondLineOffset;
      }
      os << s.substr(start, stringLen) << std::endl;
      while (start + stringLen < len && s[stringLen + start] == ' ') start++;
      start += stringLen;
    }
  } else {
    for (int i = 0; i < indentSpaces; i++) os << " ";
    os << s << std::endl;
  }
}

class CommandLine {
public:
  explicit CommandLine(Options& o) : o_(o) { declare(); }

  void parse(int argc, char** argv) {
    o_.program = argc > 0 ? argv[0] : "moe-host";
    std::vector<std::string> args(argv + 1, argv + argc);
    for (size_t i = 0; i < args.size(); i++) {
      std::string a = args[i];
      if (a == "--") break;  // TCLAP's --ignore_rest
      if (a == "--ignore_rest") break;
      if (a == "-h" || a == "--help") {
        usage();
        exit(0);
      }
      if (a == "--version") {
        std::cout << std::endl << o_.program << "  version: " << hostVersion() << std::endl << std::endl;
        exit(0);
      }
      std::string value;
      bool inline_value = false;
      if (a.rfind("--", 0) == 0) {
        size_t eq = a.find('=');
        if (eq != std::string::npos) {
          value = a.substr(eq + 1);
          a = a.substr(0, eq);
          inline_value = true;
        }
      }
      const Arg* arg = find(a);
      if (arg == nullptr) failure("Argument: " + args[i], "Couldn't find match for argument");
      if (!arg->multi && seen(arg)) failure("Argument: " + id(*arg), "Argument already set!");
      seen_.push_back(arg);
      if (arg->type.empty()) {
        if (inline_value) failure("Argument: " + id(*arg), "Couldn't find match for argument");
      } else if (!inline_value) {
        if (i + 1 >= args.size()) failure("Argument: " + id(*arg), "Missing a value for this argument!");
        value = args[++i];
      }
      if (arg->type == "uint32_t") {
        uint64_t n;
        if (!parseUint32(value, &n)) {
          failure("Argument: " + id(*arg), "Couldn't read argument value from string '" + value + "'");
        }
      }
      std::string err = arg->set(value);
      if (!err.empty()) {
        // Envoy's MalformedArgvException / EnvoyException messages, printed by main_common.cc.
        std::cerr << err << std::endl;
        exit(1);
      }
    }
  }

private:
  void add(Arg a) { args_.push_back(std::move(a)); }

  // The flags in Envoy's declaration order (options_impl.cc); TCLAP lists them in reverse.
  void declare() {
    auto ignored = [](const std::string&) { return std::string(); };
    auto uint = [](const std::string& v) {
      uint64_t n = 0;
      parseUint32(v, &n);
      return n;
    };
    add({"", "base-id", "uint32_t", "Base ID so that multiple envoys can run on the same host if needed", false, ignored});
    add({"", "use-dynamic-base-id", "", "The server chooses a base ID dynamically. Supersedes a static base ID. May not be used when the restart epoch is non-zero.", false, ignored});
    add({"", "skip-hot-restart-on-no-parent", "", "When hot restarting with epoch>0, the default behavior is for the child to crash if the connection to the parent cannot be established. Set this to true to instead continue with a regular startup, while retaining the new epoch value.", false, ignored});
    add({"", "skip-hot-restart-parent-stats", "", "When hot restarting, by default the child instance copies stats from the parent instance periodically during the draining period. This can potentially be an expensive operation; set this to true to reset all stats in child process.", false, ignored});
    add({"", "base-id-path", "string", "Path to which the base ID is written", false, ignored});
    add({"", "concurrency", "uint32_t", "# of worker threads to run", false, [this, uint](const std::string& v) {
      uint64_t n = uint(v);
      if (n == 0 || n > 1024) return std::string("error: --concurrency must be between 1 and 1024 in moe-host");
      o_.concurrency = static_cast<uint32_t>(n);
      return std::string();
    }});
    add({"c", "config-path", "string", "Path to configuration file", false, [this](const std::string& v) {
      o_.config_path = v;
      return std::string();
    }});
    add({"", "config-yaml", "string", "Inline YAML configuration, merges with the contents of --config-path", false, [](const std::string&) {
      return std::string("error: --config-yaml is not supported by moe-host (pass the whole bootstrap with -c)");
    }});
    add({"", "allow-unknown-fields", "", "Allow unknown fields in static configuration (DEPRECATED)", false, [](const std::string&) {
      return std::string("error: --allow-unknown-fields is not supported by moe-host (moectl decodes the bootstrap strictly)");
    }});
    add({"", "allow-unknown-static-fields", "", "Allow unknown fields in static configuration", false, [](const std::string&) {
      return std::string("error: --allow-unknown-static-fields is not supported by moe-host (moectl decodes the bootstrap strictly)");
    }});
    add({"", "reject-unknown-dynamic-fields", "", "Reject unknown fields in dynamic configuration", false, ignored});
    add({"", "ignore-unknown-dynamic-fields", "", "Ignore unknown fields in dynamic configuration", false, ignored});
    add({"", "skip-deprecated-logs", "", "Skips the logging of deprecated field warnings during Protobuf message validation", false, ignored});
    add({"", "log-stacktrace-single-entry", "", "Emit the entire stack trace in a single log entry instead of one log call per frame. Useful for log aggregation systems.", false, ignored});
    add({"", "admin-address-path", "string", "Admin address path", false, [this](const std::string& v) {
      o_.admin_address_path = v;
      return std::string();
    }});
    add({"", "local-address-ip-version", "string", "The local IP address version (v4 or v6).", false, [](const std::string& v) {
      if (v != "v4" && v != "v6") return "error: unknown IP address version '" + v + "'";
      return std::string();
    }});
    add({"l", "log-level", "string", "Log levels: [trace][debug][info][warning|warn][error][critical][off]\nDefault is [info]", false, [this](const std::string& v) {
      if (!parseLogLevel(v, &o_.log_level)) return "error: invalid log level specified '" + v + "'";
      return std::string();
    }});
    add({"", "component-log-level", "string", "Comma-separated list of component log levels. For example upstream:debug,config:trace", false, [this](const std::string& v) {
      std::stringstream ss(v);
      std::string item;
      while (std::getline(ss, item, ',')) {
        if (item.empty()) continue;
        size_t colon = item.find(':');
        if (colon == std::string::npos) return "error: component log level not correctly specified '" + item + "'";
        std::string name = item.substr(0, colon);
        uint32_t level;
        if (!parseLogLevel(item.substr(colon + 1), &level)) return "error: invalid log level specified '" + item.substr(colon + 1) + "'";
        if (findLogger(name) == nullptr) return "error: invalid component specified '" + name + "'";
        o_.component_log_levels.emplace_back(name, level);
      }
      return std::string();
    }});
    add({"", "log-path", "string", "Path to logfile", false, [this](const std::string& v) {
      o_.log_path = v;
      return std::string();
    }});
    add({"", "restart-epoch", "uint32_t", "Hot restart epoch #", false, [uint](const std::string& v) {
      if (uint(v) != 0) return std::string("error: --restart-epoch other than 0 is not supported by moe-host (no hot restart)");
      return std::string();
    }});
    add({"", "service-cluster", "string", "Cluster name", false, [this](const std::string& v) { o_.service_cluster = v; return std::string(); }});
    add({"", "service-node", "string", "Node name", false, [this](const std::string& v) { o_.service_node = v; return std::string(); }});
    add({"", "service-zone", "string", "Zone name", false, [this](const std::string& v) { o_.service_zone = v; return std::string(); }});
    add({"", "file-flush-interval-msec", "uint32_t", "Interval for log flushing in msec", false, [this, uint](const std::string& v) {
      o_.file_flush_interval_ms = uint(v);
      if (o_.file_flush_interval_ms == 0) o_.file_flush_interval_ms = 1;
      return std::string();
    }});
    add({"", "file-flush-min-size-kb", "uint32_t", "Minimum size in KB for log flushing", false, [this, uint](const std::string& v) {
      o_.file_flush_min_size_kb = uint(v);
      return std::string();
    }});
    add({"", "drain-time-s", "uint32_t", "Hot restart and LDS removal drain time in seconds (moe-host: how long SIGTERM waits for in-flight requests; default 5)", false, [this, uint](const std::string& v) {
      o_.drain_time_ms = uint(v) * 1000;
      return std::string();
    }});
    add({"", "drain-strategy", "string", "Hot restart drain sequence behaviour, one of 'gradual' (default) or 'immediate'.", false, [](const std::string& v) {
      if (v != "gradual" && v != "immediate") return "error: unknown drain-strategy '" + v + "'";
      return std::string();
    }});
    add({"", "parent-shutdown-time-s", "uint32_t", "Hot restart parent shutdown time in seconds", false, ignored});
    add({"", "mode", "string", "One of 'serve' (default; validate configs and then serve traffic normally) or 'validate' (validate configs and exit).", false, [this](const std::string& v) {
      if (v == "serve") o_.mode = Options::Mode::Serve;
      else if (v == "validate") o_.mode = Options::Mode::Validate;
      else if (v == "init_only") o_.mode = Options::Mode::InitOnly;
      else return "error: unknown mode '" + v + "'";
      return std::string();
    }});
    add({"", "disable-hot-restart", "", "Disable hot restart functionality", false, ignored});
    add({"", "enable-mutex-tracing", "", "Enable mutex contention tracing functionality", false, ignored});
    add({"", "cpuset-threads", "", "Get the default # of worker threads from cpuset size", false, ignored});
    add({"", "disable-extensions", "string", "Comma-separated list of extensions to disable", false, ignored});
    add({"", "socket-path", "string", "Path to hot restart socket file", false, ignored});
    add({"", "socket-mode", "string", "Socket file permission", false, ignored});
    add({"", "enable-core-dump", "", "Enable core dumps", false, ignored});
    add({"", "stats-tag", "string", "This flag provides a universal tag for all stats generated by Envoy. The format is ``tag:value``. Only alphanumeric values are allowed for tag names. For tag values all characters are permitted except for '.' (dot). This flag can be repeated multiple times to set multiple universal tags. Multiple values for the same tag name are not allowed.", true, [this](const std::string& v) {
      // options_impl.cc: name:value, name alphanumeric, value without '.', names unique.
      size_t colon = v.find(':');
      if (colon == std::string::npos || colon == 0) return "error: misformatted stats-tag '" + v + "'";
      std::string name = v.substr(0, colon), value = v.substr(colon + 1);
      for (char c : name) {
        if (!isalnum(static_cast<unsigned char>(c))) return "error: misformatted stats-tag '" + v + "' contains invalid char in '" + name + "'";
      }
      if (value.find('.') != std::string::npos) return "error: misformatted stats-tag '" + v + "' contains invalid char in '" + value + "'";
      for (auto& t : o_.stats_tags) {
        if (t.first == name) return "error: duplicate stats-tag name '" + name + "'";
      }
      o_.stats_tags.emplace_back(name, value);
      return std::string();
    }});
  }

  const Arg* find(const std::string& a) const {
    for (auto& arg : args_) {
      if ((!arg.flag.empty() && a == "-" + arg.flag) || a == "--" + arg.name) return &arg;
    }
    return nullptr;
  }
  bool seen(const Arg* a) const {
    for (auto* s : seen_) {
      if (s == a) return true;
    }
    return false;
  }
  static std::string id(const Arg& a) { return a.flag.empty() ? "--" + a.name : "-" + a.flag; }

  // TCLAP's shortID / longID.
  static std::string shortID(const Arg& a) {
    std::string s = a.flag.empty() ? "--" + a.name : "-" + a.flag;
    if (!a.type.empty()) s += " <" + a.type + ">";
    s = "[" + s + "]";
    if (a.multi) s += " ... ";
    return s;
  }
  static std::string longID(const Arg& a) {
    std::string s;
    if (!a.flag.empty()) {
      s += "-" + a.flag;
      if (!a.type.empty()) s += " <" + a.type + ">";
      s += ",  ";
    }
    s += "--" + a.name;
    if (!a.type.empty()) s += " <" + a.type + ">";
    if (a.multi) s += "  (accepted multiple times)";
    return s;
  }

  // TCLAP adds its own arguments first, so after reversal they come last.
  std::vector<Arg> listed() const {
    std::vector<Arg> out(args_.rbegin(), args_.rend());
    out.push_back({"", "ignore_rest", "", "Ignores the rest of the labeled arguments following this flag.", false, nullptr});
    out.back().flag = "-";  // printed as "--,  --ignore_rest"
    out.push_back({"", "version", "", "Displays version information and exits.", false, nullptr});
    out.push_back({"h", "help", "", "Displays usage information and exits.", false, nullptr});
    return out;
  }

  void shortUsage(std::ostream& os) const {
    std::string s = o_.program + " ";
    for (auto& a : listed()) s += " " + shortID(a);
    int second = std::min(static_cast<int>(o_.program.length()) + 2, 75 / 2);
    spacePrint(os, s, 75, 3, second);
  }

  void usage() const {
    std::cout << std::endl << "USAGE: " << std::endl << std::endl;
    shortUsage(std::cout);
    std::cout << std::endl << std::endl << "Where: " << std::endl << std::endl;
    for (auto& a : listed()) {
      spacePrint(std::cout, longID(a), 75, 3, 3);
      spacePrint(std::cout, a.help, 75, 5, 0);
      std::cout << std::endl;
    }
    std::cout << std::endl;
    spacePrint(std::cout, "moe-host: Envoy " + std::string(envoyVersion()) +
                              "'s HTTP/1.1 proxy and golang filter for moe's plugins", 75, 3, 0);
    std::cout << std::endl;
  }

  // TCLAP's StdOutput::failure.
  [[noreturn]] void failure(const std::string& arg_id, const std::string& error) const {
    std::cerr << "PARSE ERROR: " << arg_id << std::endl
              << "             " << error << std::endl << std::endl;
    std::cerr << "Brief USAGE: " << std::endl;
    shortUsage(std::cerr);
    std::cerr << std::endl << "For complete USAGE and HELP type: " << std::endl
              << "   " << o_.program << " --help" << std::endl << std::endl;
    exit(1);
  }

  Options& o_;
  std::vector<Arg> args_;
  std::vector<const Arg*> seen_;
};

} // namespace

Options parseOptions(int argc, char** argv) {
  Options o;
  CommandLine cmd(o);
  cmd.parse(argc, argv);
  return o;
}

} // namespace moe
