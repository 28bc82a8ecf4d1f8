// Filesystem watcher on a dispatcher (Envoy: source/common/filesystem/inotify/watcher_impl.cc).
// As Envoy does, it always watches the directory a path lives in (IN_MODIFY | IN_MOVED_TO) and
// raises per-file events: a watch on "dir/file" fires for events on that name, a watch on
// "dir/" (empty file name) for events on any name in the directory.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

struct event;

namespace moe {

class Dispatcher;

class FileWatcher {
public:
  enum Events : uint32_t { MovedTo = 0x1, Modified = 0x2 };
  using OnChanged = std::function<void(uint32_t events)>;

  // Throws std::runtime_error when inotify cannot be set up.
  explicit FileWatcher(Dispatcher& dispatcher);
  ~FileWatcher();
  FileWatcher(const FileWatcher&) = delete;
  FileWatcher& operator=(const FileWatcher&) = delete;

  // path "dir/file" or "dir/"; events is a mask of Events. Returns an id for removeWatch.
  // Throws std::runtime_error when the directory cannot be watched.
  uint64_t addWatch(const std::string& path, uint32_t events, OnChanged cb);
  // The callback is not called any more (the directory stays watched).
  void removeWatch(uint64_t id);

private:
  static void onReadable(int fd, short, void* arg);
  void onInotifyEvent();

  struct Watch {
    uint64_t id;
    std::string file; // "" = the whole directory
    uint32_t events;
    OnChanged cb;
  };
  int inotify_fd_ = -1;
  event* event_ = nullptr;
  std::map<int, std::vector<Watch>> watches_; // by inotify watch descriptor
  uint64_t next_id_ = 1;
  bool isWatched(uint64_t id) const;
};

} // namespace moe
