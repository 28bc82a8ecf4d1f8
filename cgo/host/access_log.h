// Access logs: the HTTP connection manager's access_log list (file, stdout and stderr loggers,
// source/extensions/access_loggers) writing through Envoy's AccessLogManager
// (source/common/access_log/access_log_manager_impl.cc): a worker formats the line and appends
// it to the file's buffer under a lock; a flush thread per file writes the buffer out once it
// holds more than --file-flush-min-size-kb or every --file-flush-interval-msec, so no worker
// waits on a disk. SIGUSR1 and POST /reopen_logs reopen every file (log rotation); at shutdown
// everything buffered is written.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "access_log_filter.h"
#include "bootstrap.h"
#include "formatter.h"
#include "stats.h"

namespace moe {

// AccessLogFileImpl.
class AccessLogFile {
public:
  enum class Destination { File, Stdout, Stderr };
  AccessLogFile(Destination dest, std::string path, uint64_t flush_interval_ms, uint64_t min_flush_bytes);
  // Opens the file; throws std::runtime_error "unable to open file '<path>': <reason>".
  void open();
  // Thread-safe; never blocks on I/O.
  void write(std::string_view data);
  void reopen();
  // Writes what is buffered now, from the calling thread.
  void flush();
  const std::string& path() const { return path_; }

private:
  void flushThread();
  void doWrite(const std::string& data);
  bool openFd();

  const Destination dest_;
  const std::string path_;
  const uint64_t flush_interval_ms_, min_flush_bytes_;
  std::mutex write_mu_;               // buffer_, flags, the thread's creation
  std::condition_variable flush_event_;
  std::string buffer_;
  bool reopen_ = false;
  bool thread_started_ = false;
  std::mutex fd_mu_;                  // the fd and the writes to it
  int fd_ = -1;
};

// AccessLogManagerImpl: one AccessLogFile per path, shared by every logger writing there.
class AccessLogManager {
public:
  void setFlushOptions(uint64_t interval_ms, uint64_t min_size_kb);
  std::shared_ptr<AccessLogFile> file(AccessLogFile::Destination dest, const std::string& path);
  void reopen();
  void flushAll();

private:
  std::mutex mu_;
  uint64_t interval_ms_ = 10000, min_size_kb_ = 64;
  std::map<std::string, std::shared_ptr<AccessLogFile>> files_;
};

AccessLogManager& accessLogManager();

// One access logger of a connection manager (AccessLog::ImplBase: the filter, then the line).
class AccessLogInstance {
public:
  explicit AccessLogInstance(const bootstrap::AccessLog& config);
  void log(const FormatContext& ctx, const StreamInfo& info) const;

private:
  Formatter formatter_;
  std::optional<AccessLogFilterImpl> filter_;
  std::shared_ptr<AccessLogFile> file_;
};

} // namespace moe
