#pragma once
// GLSL compute shaders -> SPIR-V (Vulkan 1.2 target) for the VULKAN device: through the shaderc
// shared library when one can be loaded (dlopen; no shaderc header needed), else glslc or
// glslangValidator as a subprocess; the binaries are cached on disk like every kernel.
// TG_GLSL_COMPILER=shaderc|glslc|glslangValidator picks the compiler, TG_SHADERC the library.
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include "../errors.hpp"
#include "cache.hpp"
#include "env.hpp"
#include "stats_storage.hpp"
#include "thread_pool.hpp"

namespace tg::vulkan::detail {

/// GLSL -> SPIR-V: the shaderc shared library when it loads, else glslc, else glslangValidator.
struct GlslCompiler {
  std::string kind, path, id, error;
  std::string shaderc_error; // why a shaderc library that exists did not load (Debian 12's
                             // libshaderc.so.1 does not)
  // shaderc's C API, declared here (no shaderc header needed)
  void* lib = nullptr;
  void* (*compiler_initialize)() = nullptr;
  void (*compiler_release)(void*) = nullptr;
  void* (*options_initialize)() = nullptr;
  void (*options_release)(void*) = nullptr;
  void (*options_set_target_env)(void*, int, std::uint32_t) = nullptr;
  void (*options_set_optimization_level)(void*, int) = nullptr;
  void* (*compile_into_spv)(void*, const char*, std::size_t, int, const char*, const char*,
                            void*) = nullptr;
  void (*result_release)(void*) = nullptr;
  std::size_t (*result_get_length)(void*) = nullptr;
  int (*result_get_compilation_status)(void*) = nullptr;
  const char* (*result_get_bytes)(void*) = nullptr;
  const char* (*result_get_error_message)(void*) = nullptr;

  static GlslCompiler& get() {
    static GlslCompiler c;
    return c;
  }
  GlslCompiler() {
    std::string want = env::get("TG_GLSL_COMPILER");
    if (want.empty() || want == "shaderc") {
      std::string requested = env::get("TG_SHADERC");
      std::vector<std::string> names =
          requested.empty()
              ? std::vector<std::string>{"libshaderc_shared.so.1", "libshaderc_shared.so",
                                         "libshaderc.so.1", "libshaderc.so"}
              : std::vector<std::string>{requested};
      for (const std::string& n : names) {
        if ((lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL))) {
          path = n;
          break;
        }
        const char* why = dlerror();
        if (why && std::string(why).find("No such file") == std::string::npos)
          shaderc_error = why; // present but broken
      }
      if (lib) {
        auto load = [&](auto& fn, const char* name) {
          fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
          return int(fn !=
                     nullptr); // int: `&` below loads every symbol; bool & bool warns in Clang
        };
        bool ok =
            load(compiler_initialize, "shaderc_compiler_initialize") &
            load(compiler_release, "shaderc_compiler_release") &
            load(options_initialize, "shaderc_compile_options_initialize") &
            load(options_release, "shaderc_compile_options_release") &
            load(options_set_target_env, "shaderc_compile_options_set_target_env") &
            load(options_set_optimization_level, "shaderc_compile_options_set_optimization_level") &
            load(compile_into_spv, "shaderc_compile_into_spv") &
            load(result_release, "shaderc_result_release") &
            load(result_get_length, "shaderc_result_get_length") &
            load(result_get_compilation_status, "shaderc_result_get_compilation_status") &
            load(result_get_bytes, "shaderc_result_get_bytes") &
            load(result_get_error_message, "shaderc_result_get_error_message");
        if (ok) {
          kind = "shaderc";
          Dl_info info{};
          if (dladdr(reinterpret_cast<void*>(compile_into_spv), &info) && info.dli_fname)
            path = info.dli_fname;
          id = "shaderc " + stamp(path);
          return;
        }
        dlclose(lib);
        lib = nullptr;
      }
    }
    for (const char* tool : {"glslc", "glslangValidator"}) {
      if (!want.empty() && want != "shaderc" && want != tool) continue;
      std::string p = tg::detail::find_in_path(tool);
      if (p.empty()) continue;
      kind = tool;
      path = p;
      id = kind + " " + stamp(p);
      return;
    }
    error = "no GLSL compiler: neither the shaderc shared library (libshaderc_shared.so.1 / "
            "libshaderc.so.1) nor glslc "
            "nor glslangValidator was found (install glslc or glslang-tools)";
    if (!want.empty()) error += " [TG_GLSL_COMPILER=" + want + "]";
  }
  static std::string stamp(const std::string& file) {
    struct stat st = {};
    if (::stat(file.c_str(), &st) != 0) return file;
    return file + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime);
  }

  /// SPIR-V for GLSL compute shaders (Vulkan 1.2 target), through the disk cache. glslc compiles
  /// the missing ones in one process per core: a glslc run spends most of its time initializing
  /// glslang's built-in tables (docs/performance.md has the figures). A batch
  /// that fails is compiled shader by shader, so that the error names its shader.
  std::vector<std::string> compile(const std::vector<std::string>& glsl,
                                   const std::vector<std::string>& names) {
    if (!error.empty()) throw device_error("tg: VULKAN: " + error);
    std::vector<std::string> spv(glsl.size());
    std::vector<std::size_t> todo;
    for (std::size_t i = 0; i < glsl.size(); ++i)
      if (tg::detail::read_cached(cache_file(glsl[i]), spv[i]) && spv[i].size() % 4 == 0)
        tg::detail::stats_storage().cache_hits++;
      else
        spv[i].clear(), todo.push_back(i);
    if (kind == "glslc" && todo.size() > 1) {
      std::size_t n =
          std::min<std::size_t>(todo.size(), std::max(1u, std::thread::hardware_concurrency()));
      parallel_map(n, [&](std::size_t b) {
        std::vector<std::size_t> batch;
        for (std::size_t k = b; k < todo.size(); k += n) batch.push_back(todo[k]);
        compile_batch(glsl, batch, spv);
        return 0;
      });
    }
    std::vector<std::size_t> left;
    for (std::size_t i : todo)
      if (spv[i].empty()) left.push_back(i);
    parallel_map(left.size(), [&](std::size_t k) {
      std::size_t i = left[k];
      spv[i] = compile_one(glsl[i], names[i]);
      return 0;
    });
    return spv;
  }

private:
  std::string cache_file(const std::string& glsl) const {
    return tg::detail::cache_path("vulkan-" + tg::detail::cache_key(glsl, id + " vulkan1.2") +
                                  ".spv");
  }
  /// glslc -c on the shaders `batch` in a scratch directory (it writes <input>.spv to its working
  /// directory); fills spv[i] for each shader when the whole batch compiled.
  void compile_batch(const std::vector<std::string>& glsl, const std::vector<std::size_t>& batch,
                     std::vector<std::string>& spv) {
    std::string dir = tg::detail::temp_path("glslc");
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::vector<std::string> argv{path, "-c", "--target-env=vulkan1.2", "-fshader-stage=compute"};
    for (std::size_t k = 0; k < batch.size(); ++k) {
      std::ofstream f(dir + "/" + std::to_string(k) + ".comp", std::ios::binary);
      f << glsl[batch[k]];
      argv.push_back(dir + "/" + std::to_string(k) + ".comp");
    }
    std::vector<std::string> out(batch.size());
    bool ok = tg::detail::run_process(argv, dir + "/log", dir) == 0;
    for (std::size_t k = 0; ok && k < batch.size(); ++k)
      ok = tg::detail::read_cached(dir + "/" + std::to_string(k) + ".comp.spv", out[k]) &&
           !out[k].empty() && out[k].size() % 4 == 0;
    std::filesystem::remove_all(dir, ec);
    if (!ok) return;
    for (std::size_t k = 0; k < batch.size(); ++k) {
      tg::detail::stats_storage().kernels_compiled++;
      tg::detail::write_cached(cache_file(glsl[batch[k]]), out[k]);
      spv[batch[k]] = std::move(out[k]);
    }
  }
  /// One shader, by shaderc in process or one compiler run.
  std::string compile_one(const std::string& glsl, const std::string& name) {
    std::string spv;
    std::string log;
    tg::detail::stats_storage().kernels_compiled++;
    if (kind == "shaderc") {
      void* c = compiler_initialize();
      void* o = options_initialize();
      options_set_target_env(o, 0 /* vulkan */, (1u << 22) | (2u << 12) /* 1.2 */);
      // No SPIR-V optimization (level 0, as for glslc below): the driver optimizes anyway, and
      // Debian's shaderc 2023.2 optimizer crashes (SIGSEGV) on some float16 kernels.
      options_set_optimization_level(o, 0);
      void* r = compile_into_spv(c, glsl.data(), glsl.size(), 2 /* compute */,
                                 (name + ".comp").c_str(), "main", o);
      bool ok = r && result_get_compilation_status(r) == 0;
      if (ok)
        spv.assign(result_get_bytes(r), result_get_length(r));
      else
        log = r ? result_get_error_message(r) : "shaderc returned no result";
      if (r) result_release(r);
      options_release(o);
      compiler_release(c);
      if (!ok)
        throw compile_error("tg: kernel " + name + " failed to compile with shaderc (" + path +
                                "):\n" + log,
                            glsl, log);
    } else {
      std::string tmp = tg::detail::temp_path(name);
      {
        std::ofstream f(tmp + ".comp", std::ios::binary);
        f << glsl;
      }
      std::vector<std::string> argv =
          kind == "glslc"
              ? std::vector<std::string>{path,
                                         "--target-env=vulkan1.2",
                                         "-fshader-stage=compute",
                                         "-o",
                                         tmp + ".spv",
                                         tmp + ".comp"}
              : std::vector<std::string>{path,   "-V", "--target-env", "vulkan1.2",  "-S",
                                         "comp", "-o", tmp + ".spv",   tmp + ".comp"};
      int rc = tg::detail::run_process(argv, tmp + ".log");
      log = tg::detail::read_file(tmp + ".log");
      tg::detail::read_cached(tmp + ".spv", spv);
      std::error_code ec;
      for (const char* ext : {".comp", ".spv", ".log"}) std::filesystem::remove(tmp + ext, ec);
      if (rc != 0 || spv.empty())
        throw compile_error("tg: kernel " + name + " failed to compile with " + path + " (" +
                                tg::detail::process_status(rc) + "):\n" + log,
                            glsl, log);
    }
    tg::detail::write_cached(cache_file(glsl), spv);
    return spv;
  }
};

} // namespace tg::vulkan::detail
