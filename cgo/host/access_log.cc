#include "access_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "logger.h"

namespace moe {

namespace {

// The access log file stats (access_log_manager_impl.h ACCESS_LOG_FILE_STATS), "filesystem.".
struct FileStats {
  Counter& flushed_by_timer = stats().counter("filesystem.flushed_by_timer");
  Counter& reopen_failed = stats().counter("filesystem.reopen_failed");
  Counter& write_buffered = stats().counter("filesystem.write_buffered");
  Counter& write_completed = stats().counter("filesystem.write_completed");
  Counter& write_failed = stats().counter("filesystem.write_failed");
  Gauge& write_total_buffered = stats().gauge("filesystem.write_total_buffered");
};

FileStats& fileStats() {
  static FileStats* s = new FileStats();
  return *s;
}

} // namespace

AccessLogFile::AccessLogFile(Destination dest, std::string path, uint64_t flush_interval_ms, uint64_t min_flush_bytes)
    : dest_(dest), path_(std::move(path)), flush_interval_ms_(flush_interval_ms), min_flush_bytes_(min_flush_bytes) {
  fileStats();
}

// FileImplPosix::open: stdout/stderr are dup'ed; a file is opened for appending, created with
// mode 0644 (Write | Create | Append).
bool AccessLogFile::openFd() {
  int fd;
  if (dest_ == Destination::Stdout) fd = ::dup(STDOUT_FILENO);
  else if (dest_ == Destination::Stderr) fd = ::dup(STDERR_FILENO);
  else fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  fd_ = fd;
  return true;
}

void AccessLogFile::open() {
  std::lock_guard<std::mutex> lock(fd_mu_);
  if (fd_ >= 0) return;
  if (!openFd()) throw std::runtime_error("unable to open file '" + path_ + "': " + strerror(errno));
}

void AccessLogFile::write(std::string_view data) {
  std::lock_guard<std::mutex> lock(write_mu_);
  if (!thread_started_) {
    // createFlushStructures: the flush thread starts with the first write. Detached: the file
    // lives as long as the process, which ends with _exit.
    thread_started_ = true;
    std::thread([this] { flushThread(); }).detach();
  }
  fileStats().write_buffered.inc();
  fileStats().write_total_buffered.add(static_cast<int64_t>(data.size()));
  buffer_.append(data);
  if (buffer_.size() > min_flush_bytes_) flush_event_.notify_one();
}

void AccessLogFile::reopen() {
  std::lock_guard<std::mutex> lock(write_mu_);
  reopen_ = true;
  flush_event_.notify_one();
}

// AccessLogFileImpl::doWrite: the write is done under the file lock so that two flushes
// never interleave.
void AccessLogFile::doWrite(const std::string& data) {
  std::lock_guard<std::mutex> lock(fd_mu_);
  size_t off = 0;
  bool ok = fd_ >= 0;
  while (ok && off < data.size()) {
    ssize_t w = ::write(fd_, data.data() + off, data.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) ok = false;
    else off += static_cast<size_t>(w);
  }
  if (!data.empty()) (ok ? fileStats().write_completed : fileStats().write_failed).inc();
  fileStats().write_total_buffered.sub(static_cast<int64_t>(data.size()));
}

// AccessLogFileImpl::flushThreadFunc, with the flush timer folded in: the thread wakes when
// the buffer grows past the minimum, when a reopen is asked for, or when the interval passes.
void AccessLogFile::flushThread() {
  bool do_reopen = false;
  for (;;) {
    std::string about_to_write;
    {
      std::unique_lock<std::mutex> lock(write_mu_);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(flush_interval_ms_);
      while (buffer_.size() <= min_flush_bytes_ && !reopen_) {
        if (flush_event_.wait_until(lock, deadline) == std::cv_status::timeout) {
          fileStats().flushed_by_timer.inc();
          break;
        }
      }
      about_to_write.swap(buffer_);
      if (reopen_) {
        do_reopen = true;
        reopen_ = false;
      }
    }
    if (do_reopen) {
      std::lock_guard<std::mutex> lock(fd_mu_);
      if (fd_ >= 0) ::close(fd_);
      fd_ = -1;
      if (openFd()) {
        do_reopen = false;
      } else {
        fileStats().reopen_failed.inc();
        MOE_LOG(Error, "main", "unable to reopen access log file '%s': %s", path_.c_str(), strerror(errno));
      }
    }
    // Written whether or not the file is open: the buffer is drained either way.
    doWrite(about_to_write);
  }
}

void AccessLogFile::flush() {
  std::string about_to_write;
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    about_to_write.swap(buffer_);
  }
  doWrite(about_to_write);
}

void AccessLogManager::setFlushOptions(uint64_t interval_ms, uint64_t min_size_kb) {
  std::lock_guard<std::mutex> lock(mu_);
  interval_ms_ = interval_ms;
  min_size_kb_ = min_size_kb;
}

std::shared_ptr<AccessLogFile> AccessLogManager::file(AccessLogFile::Destination dest, const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  // Keyed by the path (Filesystem::FilePathAndType, stdout and stderr by their device paths).
  const std::string key = dest == AccessLogFile::Destination::Stdout ? "/dev/stdout"
                          : dest == AccessLogFile::Destination::Stderr ? "/dev/stderr" : path;
  auto& slot = files_[key];
  if (!slot) {
    auto f = std::make_shared<AccessLogFile>(dest, key, interval_ms_, min_size_kb_ * 1024);
    f->open();
    slot = std::move(f);
  }
  return slot;
}

void AccessLogManager::reopen() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [_, f] : files_) f->reopen();
}

void AccessLogManager::flushAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [_, f] : files_) f->flush();
}

AccessLogManager& accessLogManager() {
  // Leaked on purpose, like the files and their flush threads.
  static AccessLogManager* m = new AccessLogManager();
  return *m;
}

AccessLogInstance::AccessLogInstance(const bootstrap::AccessLog& config) : formatter_(config.format) {
  if (config.filter) filter_.emplace(*config.filter);
  AccessLogFile::Destination dest = config.type == bootstrap::AccessLog::Type::Stdout ? AccessLogFile::Destination::Stdout
                                    : config.type == bootstrap::AccessLog::Type::Stderr ? AccessLogFile::Destination::Stderr
                                                                                        : AccessLogFile::Destination::File;
  file_ = accessLogManager().file(dest, config.path);
}

void AccessLogInstance::log(const FormatContext& ctx, const StreamInfo& info) const {
  if (filter_ && !filter_->evaluate(ctx, info)) return;
  file_->write(formatter_.format(ctx, info));
}

} // namespace moe
