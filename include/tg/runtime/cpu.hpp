#pragma once
// The CPU device: C source from the C renderer, compiled by the system C compiler into a shared
// object, dlopen'ed, and run on the thread pool over slices of the kernel's outer loop.
// Compiled kernels are cached on disk, keyed by a hash of source, compiler and flags.
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <unordered_map>

#include "../codegen/render.hpp"
#include "cache.hpp"
#include "device.hpp"
#include "launch.hpp"
#include "thread_pool.hpp"

extern char** environ;

namespace tg {

namespace detail {

struct SharedObject {
  void* handle = nullptr;
  using Fn = void (*)(void**, const long long*, long long, long long);
  Fn fn = nullptr;
  ~SharedObject() {
    if (handle) dlclose(handle);
  }
};

} // namespace detail

class CpuRunner : public Runner {
public:
  CpuRunner(std::shared_ptr<detail::SharedObject> so, const Program& p)
      : so_(std::move(so)), outer_(p.outer), work_(p.work), vars_(p.vars) {}
  void run(const std::vector<void*>& buffers, const std::vector<std::int64_t>& vars) override {
    std::int64_t outer = eval_sint(outer_, vars_, vars), work = eval_sint(work_, vars_, vars);
    auto* fn = so_->fn;
    void** bufs = const_cast<void**>(buffers.data());
    const long long* vs = reinterpret_cast<const long long*>(vars.data());
    int threads = env::threads();
    int chunks = work >= (std::int64_t(1) << 15) ? int(std::min<std::int64_t>(threads, outer)) : 1;
    if (chunks <= 1)
      fn(bufs, vs, 0, outer);
    else
      thread_pool(threads).parallel_for(
          outer, chunks, [&](std::int64_t b, std::int64_t e) { fn(bufs, vs, b, e); });
  }

private:
  std::shared_ptr<detail::SharedObject> so_;
  SInt outer_, work_;
  std::vector<Var> vars_;
};

class CpuDevice : public HostDevice {
public:
  CpuDevice() {
    std::string requested = env::get("TG_CC");
    std::vector<std::string> candidates = requested.empty()
                                              ? std::vector<std::string>{"cc", "gcc", "clang"}
                                              : std::vector<std::string>{requested};
    for (const std::string& c : candidates)
      if (!(compiler_ = detail::find_in_path(c)).empty()) break;
    if (!compiler_.empty()) {
      struct stat st{};
      if (::stat(compiler_.c_str(), &st) == 0)
        compiler_id_ =
            compiler_ + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime);
    }
    // -O2 keeps compiles fast; GCC's -O2 vectorizer ("very cheap") gives up on loops that need a
    // run-time alias check, hence the dynamic cost model. No FMA contraction: results match INTERP.
    flags_ = {"-O2",
              "-march=native",
              "-fPIC",
              "-shared",
              "-fwrapv",
              "-fno-math-errno",
              "-ffp-contract=off",
              "-w"};
    std::error_code ec;
    std::string resolved =
        compiler_.empty() ? "" : std::filesystem::canonical(compiler_, ec).filename().string();
    if (resolved.find("clang") == std::string::npos) flags_.push_back("-fvect-cost-model=dynamic");
  }
  std::string name() const override { return "CPU"; }
  std::string unavailable_reason() const override {
    if (compiler_.empty())
      return "no C compiler found (looked for " +
             (env::get("TG_CC").empty() ? std::string("cc, gcc, clang") : env::get("TG_CC")) +
             " on PATH; install gcc or set TG_CC)";
    return "";
  }

  std::vector<std::shared_ptr<Runner>>
  prepare(const std::vector<const Program*>& programs) override {
    std::vector<std::shared_ptr<Runner>> out(programs.size());
    std::vector<std::string> sources(programs.size()), keys(programs.size());
    std::vector<std::size_t> to_compile;
    {
      std::lock_guard<std::mutex> g(m_);
      for (std::size_t i = 0; i < programs.size(); ++i) {
        Text src = render_c(*programs[i]);
        sources[i] = std::string(src.view());
        keys[i] = key(sources[i]);
        if (loaded_.count(keys[i]))
          detail::stats_storage().cache_hits++;
        else
          to_compile.push_back(i);
      }
    }
    // Disk cache, then the compiler, for what is not loaded yet (in parallel).
    auto built = parallel_map(to_compile.size(), [&](std::size_t j) {
      std::size_t i = to_compile[j];
      return load_or_compile(keys[i], sources[i], std::string(programs[i]->name.view()));
    });
    {
      std::lock_guard<std::mutex> g(m_);
      for (std::size_t j = 0; j < built.size(); ++j) loaded_[keys[to_compile[j]]] = built[j];
    }
    std::lock_guard<std::mutex> g(m_);
    for (std::size_t i = 0; i < programs.size(); ++i) {
      auto r = std::make_shared<CpuRunner>(loaded_[keys[i]], *programs[i]);
      r->name = std::string(programs[i]->name.view());
      r->source = sources[i];
      out[i] = r;
    }
    return out;
  }

  const std::string& compiler() const { return compiler_; }
  std::string flags() const {
    std::string f;
    for (auto& x : flags_) f += (f.empty() ? "" : " ") + x;
    return f;
  }

private:
  std::string key(const std::string& source) const {
    std::string meta = compiler_id_ + "|" + flags();
    return detail::hex64(fnv1a(source, fnv1a(meta))) +
           detail::hex64(fnv1a(meta + source, 0x84222325cbf29ce4ull));
  }

  std::shared_ptr<detail::SharedObject>
  load_or_compile(const std::string& key, const std::string& source, const std::string& fn_name) {
    namespace fs = std::filesystem;
    bool disk = detail::disk_cache_enabled();
    std::string dir =
        disk ? detail::cache_dir() : fs::temp_directory_path().string() + "/tg-nocache";
    std::error_code ec;
    fs::create_directories(dir, ec);
    std::string so_path = dir + "/" + key + ".so";
    if (disk && fs::exists(so_path)) {
      if (auto so = open(so_path, fn_name)) {
        detail::stats_storage().cache_hits++;
        return so;
      }
    }
    static std::atomic<int> counter{0};
    std::string tmp =
        dir + "/tmp-" + key + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
    {
      std::ofstream f(tmp + ".c", std::ios::binary);
      f << source;
    }
    std::vector<std::string> argv{compiler_};
    argv.insert(argv.end(), flags_.begin(), flags_.end());
    argv.insert(argv.end(), {"-o", tmp + ".so", tmp + ".c", "-lm"});
    int rc = detail::run_process(argv, tmp + ".log");
    detail::stats_storage().kernels_compiled++;
    std::string log = detail::read_file(tmp + ".log");
    fs::remove(tmp + ".c", ec);
    fs::remove(tmp + ".log", ec);
    if (rc != 0) {
      fs::remove(tmp + ".so", ec);
      throw compile_error("tg: kernel " + fn_name + " failed to compile with " + compiler_ +
                              " (exit " + std::to_string(rc) + "):\n" + log,
                          source, log);
    }
    fs::rename(tmp + ".so", so_path, ec); // atomic: concurrent processes never see half a file
    if (ec) so_path = tmp + ".so";
    auto so = open(so_path, fn_name);
    if (!disk) fs::remove(so_path, ec); // dlopen keeps the mapping
    if (!so)
      throw compile_error("tg: cannot load compiled kernel " + so_path + ": " + dlerror(), source,
                          log);
    return so;
  }

  static std::shared_ptr<detail::SharedObject> open(const std::string& path,
                                                    const std::string& fn_name) {
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) return nullptr;
    auto so = std::make_shared<detail::SharedObject>();
    so->handle = h;
    so->fn = reinterpret_cast<detail::SharedObject::Fn>(dlsym(h, fn_name.c_str()));
    if (!so->fn) return nullptr;
    return so;
  }

  std::string compiler_, compiler_id_;
  std::vector<std::string> flags_;
  std::mutex m_;
  std::unordered_map<std::string, std::shared_ptr<detail::SharedObject>> loaded_;
};

} // namespace tg
