// libFuzzer harness for tg's one parser of untrusted input, the safetensors reader
// (tg/state/safetensors.hpp). Built by Clang with -fsanitize=fuzzer,address,undefined
// (TG_BUILD_FUZZ=ON, tests/fuzz/CMakeLists.txt); CTest runs it briefly from corpus/.
//
// Every input must either load or be rejected with tg::safetensors::format_error: any other
// exception, a crash, a sanitizer report, a hang or an allocation past -rss_limit_mb is a bug.
// What loads must also survive a round trip: saved again and reloaded, it has the same tensors
// (names, dtypes, shapes and bytes) and the same metadata.
#include <tg/tg.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

namespace {

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "fuzz_safetensors: %s\n", what.c_str());
  std::abort();
}

/// The bytes a tensor holds (bool: 0 or 1, as load normalizes them).
std::vector<unsigned char> bytes_of(const tg::Tensor& t) {
  std::vector<unsigned char> out(std::size_t(t.numel()) * std::size_t(tg::itemsize(t.dtype())));
  tg::Tensor c = t.contiguous();
  c.realize();
  const tg::LazyPtr& node = c.lazy();
  const tg::Buffer& b = *(node->op == tg::Op::Buffer ? node->buffer : node->src.at(0)->buffer);
  if (!out.empty()) b.device->copy_out(out.data(), b.ptr, out.size());
  return out;
}

void check_round_trip(std::span<const unsigned char> bytes, const tg::safetensors::Header& h) {
  tg::safetensors::LoadOptions on_interp; // the interpreter: no kernel compiles
  on_interp.device = "INTERP";
  tg::StateDict loaded = tg::safetensors::load(bytes, on_interp);
  if (loaded.size() != h.tensors.size()) bug("load returned another number of tensors");
  for (const tg::safetensors::TensorInfo& info : h.tensors) {
    const tg::Tensor& t = loaded.at(info.name);
    if (t.dtype() != info.dtype) bug("tensor \"" + info.name + "\" loaded with another dtype");
    if (t.shape() != info.shape) bug("tensor \"" + info.name + "\" loaded with another shape");
    std::vector<unsigned char> data = bytes_of(t);
    const unsigned char* in = bytes.data() + h.data_start + info.begin;
    if (data.size() != info.end - info.begin) bug("tensor \"" + info.name + "\": size differs");
    for (std::size_t i = 0; i < data.size(); ++i)
      if (data[i] != (info.dtype == tg::DType::Bool ? (in[i] ? 1 : 0) : in[i]))
        bug("tensor \"" + info.name + "\": loaded bytes differ from the file's");
  }
  std::vector<unsigned char> again = tg::safetensors::save(loaded, h.metadata);
  tg::safetensors::Header h2 = tg::safetensors::read_header(again);
  if (h2.metadata != h.metadata) bug("the metadata changed in a round trip");
  if (h2.tensors.size() != h.tensors.size()) bug("a round trip changed the number of tensors");
  tg::StateDict reloaded = tg::safetensors::load(again, on_interp);
  for (const auto& [name, t] : loaded) {
    const tg::Tensor& u = reloaded.at(name);
    if (u.dtype() != t.dtype() || u.shape() != t.shape() || bytes_of(u) != bytes_of(t))
      bug("tensor \"" + name + "\" changed in a round trip");
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const unsigned char> bytes(data, size);
  tg::safetensors::Header h;
  try {
    h = tg::safetensors::read_header(bytes);
  } catch (const tg::safetensors::format_error& e) {
    if (std::strlen(e.what()) == 0) bug("a format_error without a message");
    return 0; // rejected, as it should be
  }
  // Accepted: the header's promises hold, ...
  std::uint64_t at = 0;
  for (const tg::safetensors::TensorInfo& info : h.tensors) {
    if (info.begin != at || info.end < info.begin)
      bug("accepted tensors that do not tile the data");
    at = info.end;
  }
  if (h.data_start < 8 || h.data_start + at != size) bug("accepted a header that misstates sizes");
  // ... and the file loads and saves again (no error is allowed past the header check).
  check_round_trip(bytes, h);
  return 0;
}
