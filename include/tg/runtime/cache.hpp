#pragma once
// The pieces every runtime's kernel cache and compiler driver share: where the cache lives
// (TG_CACHE_DIR, else $XDG_CACHE_HOME/tg, else ~/.cache/tg; TG_CACHE=0 disables it), stable keys
// (hashes of source, compiler and flags), atomic writes (a temporary file renamed into place, so
// concurrent processes never see half a file), and running a compiler as a subprocess.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "../util/text.hpp"
#include "env.hpp"

extern char** environ;

namespace tg::detail {

inline std::string find_in_path(const std::string& exe) {
  if (exe.find('/') != std::string::npos) return access(exe.c_str(), X_OK) == 0 ? exe : "";
  std::string path = env::get("PATH", "/usr/bin:/bin");
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    std::string p = dir + "/" + exe;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

/// Runs argv with stdout and stderr into `log` (in directory `cwd` when given); returns the exit
/// status, 128 + the signal number when a signal ended it (as shells do), or -1 when it could not
/// be started.
inline int run_process(const std::vector<std::string>& argv, const std::string& log,
                       const std::string& cwd = "") {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  pid_t pid;
  int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// How a run_process status reads in an error message: "exit 1", "killed by signal 11 (...)".
inline std::string process_status(int rc) {
  if (rc < 0) return "could not be started";
  if (rc > 128)
    return "killed by signal " + std::to_string(rc - 128) + " (" + strsignal(rc - 128) + ")";
  return "exit " + std::to_string(rc);
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

/// The kernel cache directory: TG_CACHE_DIR, else $XDG_CACHE_HOME/tg, else ~/.cache/tg.
inline std::string cache_dir() {
  std::string d = env::get("TG_CACHE_DIR");
  if (d.empty()) {
    std::string xdg = env::get("XDG_CACHE_HOME");
    d = !xdg.empty() ? xdg + "/tg" : env::get("HOME", "/tmp") + "/.cache/tg";
  }
  return d;
}
inline bool disk_cache_enabled() { return env::get("TG_CACHE", "1") != "0"; }

/// A 128-bit cache key (32 hex digits) for a source and what compiles it (compiler, flags, target).
inline std::string cache_key(std::string_view source, std::string_view meta) {
  std::string m(meta);
  return hex64(fnv1a(source, fnv1a(m))) +
         hex64(fnv1a(m + std::string(source), 0x84222325cbf29ce4ull));
}

/// The path of a cache entry, its directory created; empty when the disk cache is disabled.
inline std::string cache_path(const std::string& file) {
  if (!disk_cache_enabled()) return "";
  std::error_code ec;
  std::filesystem::create_directories(cache_dir(), ec);
  return cache_dir() + "/" + file;
}

/// Reads a whole cache entry; false when it is missing (or unreadable).
inline bool read_cached(const std::string& path, std::string& out) {
  if (path.empty()) return false;
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::stringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return !out.empty();
}

/// Writes a cache entry atomically (temporary file + rename). Failures are ignored: the cache is
/// an optimization.
inline void write_cached(const std::string& path, std::string_view bytes) {
  if (path.empty()) return;
  static std::atomic<int> counter{0};
  std::string tmp = path + ".tmp-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(bytes.data(), std::streamsize(bytes.size()));
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

/// A fresh temporary path in the cache directory (or /tmp when the cache is disabled).
inline std::string temp_path(const std::string& stem) {
  static std::atomic<int> counter{0};
  std::string dir = disk_cache_enabled()
                        ? cache_dir()
                        : std::filesystem::temp_directory_path().string() + "/tg-nocache";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return dir + "/tmp-" + stem + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

} // namespace tg::detail
