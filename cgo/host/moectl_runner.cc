#include "moectl_runner.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace moe {
namespace {

bool isExecutable(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

} // namespace

std::string findMoectl() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    std::string dir(self);
    dir = dir.substr(0, dir.rfind('/'));
    if (isExecutable(dir + "/moectl")) return dir + "/moectl";
  }
  const char* env = getenv("MOE_MOECTL");
  if (env != nullptr && *env != '\0') return env;
  return "moectl";  // execvp searches PATH
}

MoectlResult runMoectl(const std::vector<std::string>& args) {
  std::string moectl = findMoectl();
  std::vector<const char*> argv{moectl.c_str()};
  for (auto& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(fds[0]);
    close(fds[1]);
    throw std::runtime_error(std::string("fork: ") + strerror(e));
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);  // dup2 clears O_CLOEXEC on the copy
    // Sockets of the running server (upstream connections are not close-on-exec) must not
    // live on in the child: a connection moe-host closes would stay open while moectl runs.
#ifdef SYS_close_range
    syscall(SYS_close_range, 3, ~0U, 0);
#endif
    execvp(argv[0], const_cast<char* const*>(argv.data()));
    fprintf(stderr, "moe-host: cannot run %s: %s\n", moectl.c_str(), strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  MoectlResult res;
  char buf[65536];
  for (;;) {
    ssize_t r = read(fds[0], buf, sizeof(buf));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    res.out.append(buf, static_cast<size_t>(r));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  res.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return res;
}

} // namespace moe
