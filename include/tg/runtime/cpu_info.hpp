#pragma once
// cpu_info: the host CPU as the CPU device's kernels are tuned to it, and the choices made from
// it (cpu_target). The reasoning, in one place (figures: docs/performance.md, "CPU tiles"):
//
// - Kernels are compiled with -march=native, so they may use every instruction the host has.
// - A product's inner step is a register tile of rows x lanes outputs: `rows` broadcasts of the
//   left operand, lanes / W vector loads of the right one (W floats a vector), and rows x lanes / W
//   fused multiply-adds (contract.hpp) into as many vector accumulators. A core with two FMA
//   units of 4 cycles' latency keeps 8 of them in flight, so a tile needs more than 8
//   accumulators, plus registers for the loads.
// - AVX-512 (32 vector registers of 64 bytes): vectors of 16 floats and tiles of 8 x 48 (24
//   accumulators, 3 loads and 8 broadcasts, which the FMAs read from memory), 8 x 32 where
//   tiles of 48 would compute many columns past the output's (256 columns: opt.hpp). On an Intel
//   core with two 512-bit FMA units that is 64 float operations a cycle (Zen 4 runs a 512-bit
//   operation as two halves: not measured). 8 x 48 ran 5-8% faster than 8 x 32 on an Intel Xeon
//   (11 loads, the panel's and the broadcasts, per 24 FMAs against 10 per 16; on Zen 4 not
//   measured); 4 x 32 (8 accumulators) was latency-bound; 8 x 64 was faster on small products,
//   but its panels outgrew pack_panels' copy (2048²: 3x slower).
// - AVX2 (16 registers of 32 bytes): 4 x 16 tiles (8 accumulators, 2 loads, 4 broadcasts leave
//   2 registers), the choice measured on AVX2 machines before fused multiply-adds.
// - AVX2 and AVX-512 machines convert float16 by F16C, one instruction where decompose's
//   conversion from its fields took twenty (render.hpp's prelude). A 16-bit product's tile
//   widens its rows of the left operand into float32s before its loop (widen_rows.hpp), 16 a
//   conversion, and is then float32's tile.
// - AVX512_BF16 (Zen 4, Intel since Cooper Lake): a bfloat16 product's tile takes two steps of its
//   reduction at once with vdpbf16ps (pair_products.hpp), float32's tile otherwise.
// - AMX (Intel since Sapphire Rapids): a bfloat16 product's tile is 16 x 32, AMX's tiles of 16
//   rows by 16 columns, and takes 32 steps at once with tdpbf16ps (amx_products.hpp): 16 x 32 ran
//   1.7x faster than 8 x 16 and as fast as 32 x 32 (docs/performance.md). Linux lends a process
//   the tile registers only when it asks (arch_prctl), which detect_cpu does; AMX is used only
//   where that succeeds.
// - Without AVX: the portable choices (Target::cpu()), which GCC splits into 16-byte vectors.
//
// TG_CPU_ISA=avx2 or TG_CPU_ISA=sse makes the device choose, and compile its kernels, for a
// narrower ISA than the host's (-march=x86-64-v3 or x86-64-v2 instead of -march=native: with
// -mno-avx512f, GCC 12 tuned for a Sapphire Rapids kept a softmax's exponentials scalar), so an
// older machine's kernels can be tested on a newer one; TG_CPU_ISA=avx512 keeps bfloat16
// products in float32 tiles on an AVX512_BF16 host, TG_CPU_ISA=avx512bf16 off AMX's tiles.
#include <cstdio>
#include <string>
#if defined(__GNUC__) && defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "../codegen/pipeline.hpp"
#include "env.hpp"

namespace tg {

/// The vector instructions the CPU device's kernels are chosen for (Avx512Bf16: AVX-512 with
/// AVX512_BF16's bfloat16 products; Amx: that and AMX's bfloat16 tiles).
enum class CpuIsa : std::uint8_t { Sse, Avx2, Avx512, Avx512Bf16, Amx };

constexpr const char* cpu_isa_name(CpuIsa isa) {
  return isa == CpuIsa::Amx          ? "amx"
         : isa == CpuIsa::Avx512Bf16 ? "avx512bf16"
         : isa == CpuIsa::Avx512     ? "avx512"
         : isa == CpuIsa::Avx2       ? "avx2"
                                     : "sse";
}

/// The CPU device's target for a host with `isa` (see the top of this file).
constexpr Target cpu_target(CpuIsa isa) {
  if (isa == CpuIsa::Sse) return Target::cpu();
  Target t = Target::cpu(isa >= CpuIsa::Avx512 ? 48 : 16);
  t.decompose.f16_bits = false; // F16C (x86-64-v3 has it) converts float16: tg_h2f, tg_f2h
  if (isa >= CpuIsa::Avx512) {
    t.vector_bytes = 64;
    t.lower.upcast_rows = 8;
  }
  t.bf16_pairs = t.lower.bf16_pairs = isa >= CpuIsa::Avx512Bf16;
  t.amx = isa == CpuIsa::Amx;
  if (t.amx) t.lower.bf16_tile = 16;
  return t;
}

/// The host CPU: its ISA (TG_CPU_ISA may narrow it) and its model name.
struct CpuInfo {
  CpuIsa isa = CpuIsa::Sse;
  bool narrowed = false; // by TG_CPU_ISA, below the host's
  std::string model;     // "Intel(R) Xeon(R) ..." (kernel and TG_BEAM caches are per model)
  std::string problem;   // TG_CPU_ISA asked for more than the host has
};

namespace detail {
inline CpuInfo detect_cpu() {
  CpuInfo c;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
  const bool bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
  c.isa = bf16 ? CpuIsa::Avx512Bf16 : avx512 ? CpuIsa::Avx512 : avx2 ? CpuIsa::Avx2 : CpuIsa::Sse;
#if defined(__x86_64__) && defined(__linux__)
  // AMX-TILE and AMX-BF16 (CPUID leaf 7, EDX bits 24 and 22), and the tile registers' state
  // lent to this process (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (bf16 && __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx >> 24 & 1) &&
      (edx >> 22 & 1) && ::syscall(SYS_arch_prctl, 0x1023, 18) == 0)
    c.isa = CpuIsa::Amx;
#endif
#endif
  if (std::FILE* f = std::fopen("/proc/cpuinfo", "r")) {
    char line[512];
    while (c.model.empty() && std::fgets(line, sizeof line, f)) {
      std::string s(line);
      if (s.rfind("model name", 0) != 0 && s.rfind("Model", 0) != 0) continue;
      if (std::size_t colon = s.find(':'); colon != std::string::npos) {
        c.model = s.substr(s.find_first_not_of(" \t", colon + 1));
        while (!c.model.empty() && (c.model.back() == '\n' || c.model.back() == ' '))
          c.model.pop_back();
      }
    }
    std::fclose(f);
  }
  if (const std::string want = env::get("TG_CPU_ISA"); !want.empty()) {
    CpuIsa w = CpuIsa::Sse;
    while (w < CpuIsa::Amx && want != cpu_isa_name(w)) w = CpuIsa(int(w) + 1);
    if (want != cpu_isa_name(w))
      c.problem = "TG_CPU_ISA=" + want + " is not one of amx, avx512bf16, avx512, avx2, sse";
    else if (w > c.isa)
      c.problem =
          "TG_CPU_ISA=" + want + " asks for more than this CPU has (" + cpu_isa_name(c.isa) + ")";
    else if (w < c.isa)
      c.isa = w, c.narrowed = true;
  }
  return c;
}
} // namespace detail

/// The host CPU, detected once.
inline const CpuInfo& host_cpu() {
  static const CpuInfo info = detail::detect_cpu();
  return info;
}

} // namespace tg
