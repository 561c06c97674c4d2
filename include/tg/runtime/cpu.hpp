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

#include "../util/rc.hpp"
#include "cache.hpp"
#include "cpu_info.hpp"
#include "host.hpp"
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
  CpuRunner(Rc<detail::SharedObject> so, const Program& p)
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
  Rc<detail::SharedObject> so_;
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
      struct stat st = {};
      if (::stat(compiler_.c_str(), &st) == 0)
        compiler_id_ =
            compiler_ + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime);
    }
    // -O2 keeps compiles fast; GCC's -O2 vectorizer ("very cheap") gives up on loops that need a
    // run-time alias check, hence the dynamic cost model. No FMA contraction: results match INTERP.
    // No trapping math (tg never unmasks a float exception; values do not change): otherwise GCC
    // may not if-convert a loop with selects and float ops, and without AVX-512's masks a
    // softmax's exponentials stayed scalar (x86-64-v3: 70 ms, 5x the vectorized loop).
    flags_ = {"-O2",
              "-march=native",
              "-fPIC",
              "-shared",
              "-fwrapv",
              "-fno-math-errno",
              "-fno-trapping-math",
              "-ffp-contract=off",
              "-w"};
    std::error_code ec;
    std::string resolved =
        compiler_.empty() ? "" : std::filesystem::canonical(compiler_, ec).filename().string();
    // GCC versions a loop on a run-time alias check per pair of a stored and a loaded buffer, at
    // most 10 by default: that left a kernel with several outputs (Adam's update: 3 stores, 6
    // loads) scalar, 4x slower than its three kernels. (Clang 14 and 19 vectorize it as it is.)
    if (resolved.find("clang") == std::string::npos)
      flags_.insert(flags_.end(),
                    {"-fvect-cost-model=dynamic", "--param=vect-max-version-for-alias-checks=64"});
    if (host_cpu().narrowed && host_cpu().isa < CpuIsa::Avx512) // (TG_CPU_ISA)
      for (std::string& f : flags_)
        if (f == "-march=native")
          f = host_cpu().isa == CpuIsa::Avx2 ? "-march=x86-64-v3" : "-march=x86-64-v2";
    // TG_KERNEL_SANITIZE=1: kernels built with AddressSanitizer and UBSan, any report fatal, so
    // that a generated kernel indexing out of bounds stops the process with a report naming the
    // kernel. The kernels then need the ASan runtime, which must be the process's own: a process
    // built with -fsanitize=address by the same compiler family as the kernels (GCC's libasan,
    // or Clang's shared runtime, hence -shared-libasan). The flags are part of the cache key.
    // At -O1, as ASan advises: sanitized kernels compile much faster than at -O2.
    if (env::get("TG_KERNEL_SANITIZE", "0") != "0") {
      flags_.front() = "-O1";
      flags_.insert(flags_.end(), {"-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                                   "-fno-omit-frame-pointer", "-g1"});
      if (resolved.find("clang") != std::string::npos) flags_.push_back("-shared-libasan");
      if (!dlsym(RTLD_DEFAULT, "__asan_init"))
        sanitize_problem_ = "TG_KERNEL_SANITIZE is set, but this process is not built with "
                            "-fsanitize=address (its kernels would need the ASan runtime loaded "
                            "first); unset it, or build with -fsanitize=address";
    }
  }
  std::string name() const override { return "CPU"; }
  std::string model() const override {
    return "CPU " + host_cpu().model + " " + cpu_isa_name(host_cpu().isa);
  }
  /// The choices for this CPU (runtime/cpu_info.hpp).
  Target target() const override { return with_env(cpu_target(host_cpu().isa)); }
  std::string unavailable_reason() const override {
    if (compiler_.empty())
      return "no C compiler found (looked for " +
             (env::get("TG_CC").empty() ? std::string("cc, gcc, clang") : env::get("TG_CC")) +
             " on PATH; install gcc or set TG_CC)";
    return !host_cpu().problem.empty() ? host_cpu().problem : sanitize_problem_;
  }

  std::vector<Rc<Runner>> prepare(const std::vector<const KernelCode*>& kernels) override {
    const std::size_t n = kernels.size();
    std::vector<const Program*> programs(n);
    std::vector<std::string> sources(n), keys(n);
    std::vector<Rc<detail::SharedObject>> so(n);
    std::vector<std::size_t> missing; // the first program of each distinct kernel not loaded yet
    {
      std::lock_guard<std::mutex> g(m_);
      std::unordered_map<std::string, int> seen;
      for (std::size_t i = 0; i < n; ++i) {
        programs[i] = &kernels[i]->program;
        sources[i] = std::string(kernels[i]->source.view());
        keys[i] = key(sources[i]);
        if (auto it = loaded_.find(keys[i]); it != loaded_.end()) {
          so[i] = it->second;
          detail::stats_storage().cache_hits++;
        } else if (!seen[keys[i]]++) {
          missing.push_back(i);
        }
      }
    }
    // The disk cache, then the compiler for what is not there: most of a small kernel's compile
    // time is starting the compiler and the linker, so the kernels are split into one file per
    // core, each built by one compiler run, the files in parallel.
    std::vector<std::size_t> to_compile;
    for (std::size_t i : missing)
      if (!(so[i] = load_cached(keys[i]))) to_compile.push_back(i);
    if (!to_compile.empty()) {
      std::size_t files = std::min<std::size_t>(to_compile.size(),
                                                std::max(1u, std::thread::hardware_concurrency()));
      std::vector<std::vector<std::size_t>> batch(files); // balanced by source length
      std::vector<std::size_t> chars(files, 0);
      for (std::size_t i : to_compile) {
        std::size_t b = std::size_t(std::min_element(chars.begin(), chars.end()) - chars.begin());
        batch[b].push_back(i);
        chars[b] += sources[i].size();
      }
      auto built = parallel_map(
          files, [&](std::size_t b) { return compile(batch[b], programs, sources, keys); });
      for (std::size_t b = 0; b < files; ++b)
        for (std::size_t k = 0; k < batch[b].size(); ++k) so[batch[b][k]] = built[b][k];
    }
    std::vector<Rc<Runner>> out(n);
    std::lock_guard<std::mutex> g(m_);
    for (std::size_t i : missing) loaded_[keys[i]] = so[i];
    for (std::size_t i = 0; i < n; ++i) {
      auto r = make_rc<CpuRunner>(loaded_[keys[i]], *programs[i]);
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
    // (-march=native: the model, and the ISA found, as VMs of different CPUs share model names)
    std::string meta =
        compiler_id_ + "|" + flags() + "|" + host_cpu().model + "|" + cpu_isa_name(host_cpu().isa);
    return detail::hex64(fnv1a(source, fnv1a(meta))) +
           detail::hex64(fnv1a(meta + source, 0x84222325cbf29ce4ull));
  }

  /// A kernel's function in its shared object: named by the kernel's key, so that several
  /// kernels (with the same name, E_10, but other code) can share one file.
  static std::string symbol(const std::string& key) { return "tg_" + key; }

  std::string dir() const {
    return detail::disk_cache_enabled()
               ? detail::cache_dir()
               : std::filesystem::temp_directory_path().string() + "/tg-nocache";
  }

  Rc<detail::SharedObject> load_cached(const std::string& key) const {
    if (!detail::disk_cache_enabled()) return nullptr;
    std::string path = dir() + "/" + key + ".so";
    if (!std::filesystem::exists(path)) return nullptr;
    auto so = open(path, symbol(key));
    if (so) detail::stats_storage().cache_hits++;
    return so;
  }

  /// Compiles the kernels programs[i], i in `which`, as one C file into one shared object, then
  /// files it in the cache once per kernel (hard links). When that file fails to compile, each
  /// kernel is compiled alone, so that the error names the kernel (and its source) at fault.
  std::vector<Rc<detail::SharedObject>> compile(const std::vector<std::size_t>& which,
                                                const std::vector<const Program*>& programs,
                                                const std::vector<std::string>& sources,
                                                const std::vector<std::string>& keys) {
    namespace fs = std::filesystem;
    const std::string d = dir();
    std::error_code ec;
    fs::create_directories(d, ec);
    static std::atomic<int> counter{0};
    std::string tmp = d + "/tmp-" + keys[which[0]] + "-" + std::to_string(getpid()) + "-" +
                      std::to_string(counter++);
    std::string source;
    for (std::size_t i : which) {
      std::string name(programs[i]->name.view());
      source +=
          "#define " + name + " " + symbol(keys[i]) + "\n" + sources[i] + "#undef " + name + "\n";
    }
    {
      std::ofstream f(tmp + ".c", std::ios::binary);
      f << source;
    }
    std::vector<std::string> argv{compiler_};
    argv.insert(argv.end(), flags_.begin(), flags_.end());
    argv.insert(argv.end(), {"-o", tmp + ".so", tmp + ".c", "-lm"});
    int rc = detail::run_process(argv, tmp + ".log");
    std::string log = detail::read_file(tmp + ".log");
    fs::remove(tmp + ".c", ec);
    fs::remove(tmp + ".log", ec);
    if (rc != 0) {
      fs::remove(tmp + ".so", ec);
      if (which.size() > 1) {
        std::vector<Rc<detail::SharedObject>> out;
        for (std::size_t i : which) out.push_back(compile({i}, programs, sources, keys)[0]);
        return out; // (only if the file failed for a reason no single kernel has)
      }
      std::string name(programs[which[0]]->name.view());
      throw compile_error("tg: kernel " + name + " failed to compile with " + compiler_ + " (" +
                              detail::process_status(rc) + "):\n" + log,
                          sources[which[0]], log);
    }
    detail::stats_storage().kernels_compiled += std::int64_t(which.size());
    const bool disk = detail::disk_cache_enabled();
    std::vector<Rc<detail::SharedObject>> out;
    for (std::size_t i : which) {
      // Filed under each kernel's key: a link, atomic, so concurrent processes never see half a
      // file (a copy where links are refused). Without the disk cache, the temporary file is
      // opened and removed (dlopen keeps the mapping).
      std::string path = d + "/" + keys[i] + ".so";
      if (disk) {
        fs::create_hard_link(tmp + ".so", path, ec);
        if (ec && !fs::exists(path)) {
          std::string part = tmp + "-" + std::to_string(out.size()) + ".part";
          fs::copy_file(tmp + ".so", part, ec);
          fs::rename(part, path, ec);
        }
      }
      auto so = open(disk && fs::exists(path) ? path : tmp + ".so", symbol(keys[i]));
      if (!so)
        throw compile_error("tg: cannot load compiled kernel " +
                                std::string(programs[i]->name.view()) + " from " + tmp +
                                ".so: " + dlerror(),
                            sources[i], log);
      out.push_back(so);
    }
    fs::remove(tmp + ".so", ec);
    return out;
  }

  static Rc<detail::SharedObject> open(const std::string& path, const std::string& fn_name) {
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) return nullptr;
    auto so = make_rc<detail::SharedObject>();
    so->handle = h;
    so->fn = reinterpret_cast<detail::SharedObject::Fn>(dlsym(h, fn_name.c_str()));
    if (!so->fn) return nullptr;
    return so;
  }

  std::string compiler_, compiler_id_, sanitize_problem_;
  std::vector<std::string> flags_;
  std::mutex m_;
  std::unordered_map<std::string, Rc<detail::SharedObject>> loaded_;
};

} // namespace tg
