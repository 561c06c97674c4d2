#pragma once
// Tests that need a fresh process (settings read once, such as TG_BEAM, or a cold disk cache) run
// one of their own test binary's cases again in a child, with extra environment.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace tg_test {

/// Runs one test case of this binary in a new process with extra environment; returns its output.
inline std::string run_child(const std::string& test_case, const std::string& env) {
  std::string cmd = "env TG_TEST_CHILD=1 " + env + " /proc/" + std::to_string(getpid()) +
                    "/exe --no-version -tc=\"" + test_case + "\" 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int rc = pclose(p);
  INFO(out);
  CHECK(rc == 0);
  return out;
}
/// Whether this process is such a child (its cases marked "child: " run only then).
inline bool child() { return std::getenv("TG_TEST_CHILD") != nullptr; }
/// A new empty directory under the temporary directory.
inline std::string fresh_dir() {
  std::string d = std::filesystem::temp_directory_path().string() + "/tg-test-XXXXXX";
  REQUIRE(mkdtemp(d.data()) != nullptr);
  return d;
}
inline bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

} // namespace tg_test
