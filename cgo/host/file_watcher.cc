#include "file_watcher.h"

#include <event2/event.h>
#include <limits.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "dispatcher.h"
#include "logger.h"

namespace moe {

FileWatcher::FileWatcher(Dispatcher& dispatcher) {
  inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0)
    throw std::runtime_error(std::string("inotify_init1: ") + strerror(errno) +
                             " (consider raising fs.inotify.max_user_instances)");
  event_ = event_new(dispatcher.base(), inotify_fd_, EV_READ | EV_PERSIST, &FileWatcher::onReadable, this);
  event_add(event_, nullptr);
}

FileWatcher::~FileWatcher() {
  if (event_ != nullptr) event_free(event_);
  if (inotify_fd_ >= 0) close(inotify_fd_);
}

uint64_t FileWatcher::addWatch(const std::string& path, uint32_t events, OnChanged cb) {
  // watcher_impl.cc addWatch: split into directory and file name, watch the directory.
  std::string dir, file;
  auto slash = path.rfind('/');
  if (slash == std::string::npos) {
    dir = ".";
    file = path;
  } else {
    dir = slash == 0 ? "/" : path.substr(0, slash);
    file = path.substr(slash + 1);
  }
  int wd = inotify_add_watch(inotify_fd_, dir.c_str(), IN_MODIFY | IN_MOVED_TO);
  if (wd < 0)
    throw std::runtime_error("unable to add filesystem watch for file " + path + ": " + strerror(errno));
  MOE_LOG(Debug, "file", "added watch for directory: '%s' file: '%s' fd: %d", dir.c_str(), file.c_str(), wd);
  uint64_t id = next_id_++;
  watches_[wd].push_back(Watch{id, file, events, std::move(cb)});
  return id;
}

void FileWatcher::removeWatch(uint64_t id) {
  for (auto& [wd, ws] : watches_) {
    for (auto it = ws.begin(); it != ws.end(); ++it) {
      if (it->id == id) {
        ws.erase(it);
        return;
      }
    }
  }
}

bool FileWatcher::isWatched(uint64_t id) const {
  for (auto& [wd, ws] : watches_) {
    for (auto& w : ws) {
      if (w.id == id) return true;
    }
  }
  return false;
}

void FileWatcher::onReadable(int, short, void* arg) { static_cast<FileWatcher*>(arg)->onInotifyEvent(); }

void FileWatcher::onInotifyEvent() {
  for (;;) {
    alignas(inotify_event) char buffer[sizeof(inotify_event) + NAME_MAX + 1];
    ssize_t rc = read(inotify_fd_, buffer, sizeof(buffer));
    if (rc < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (rc <= 0) {
      MOE_LOG(Error, "file", "inotify read: %s", rc < 0 ? strerror(errno) : "end of file");
      return;
    }
    size_t index = 0;
    while (index < static_cast<size_t>(rc)) {
      auto* ev = reinterpret_cast<inotify_event*>(buffer + index);
      std::string file = ev->len > 0 ? std::string(ev->name) : std::string();
      uint32_t events = 0;
      if (ev->mask & IN_MODIFY) events |= Modified;
      if (ev->mask & IN_MOVED_TO) events |= MovedTo;
      MOE_LOG(Debug, "file", "notification: fd: %d mask: %x file: %s", ev->wd, ev->mask, file.c_str());
      auto it = watches_.find(ev->wd);
      if (it != watches_.end()) {
        // Copy: a callback may add or remove watches.
        std::vector<Watch> ws = it->second;
        for (auto& w : ws) {
          if ((w.events & events) == 0 || !isWatched(w.id)) continue;
          if (w.file == file || w.file.empty()) {
            try {
              w.cb(events);
            } catch (const std::exception& e) {
              MOE_LOG(Warn, "file", "filesystem watch callback for '%s' threw exception: %s", file.c_str(), e.what());
            }
          }
        }
      }
      index += sizeof(inotify_event) + ev->len;
    }
  }
}

} // namespace moe
