#pragma once
// safetensors (https://github.com/huggingface/safetensors): save and load named tensors.
//
//   file   = u64 little-endian N | N bytes of JSON header | data
//   header = {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 3],
//             "data_offsets": [begin, end]}, ...}      (offsets into data, row-major,
//             little-endian)
//
// Loading validates everything before it allocates a tensor: the header length against the
// file, the JSON (a small strict parser, no dependency), every dtype name, shape and offset
// pair, that the tensors tile the data exactly (no gap, overlap or trailing bytes), as the
// reference implementation does. A malformed or truncated file raises tg::safetensors::
// format_error naming the file and the problem; it never reads out of bounds. The header is read
// in one pass without a JSON tree: time linear in its length, memory in proportion to the
// tensors it lists. tests/fuzz/fuzz_safetensors.cpp fuzzes all of this. The format is read and
// written by state/safetensors_format.hpp; these functions are defined in tg/impl/safetensors.hpp.
#include <cstdint>
#include <map>
#include <span>

#include "../nn/module.hpp"

namespace tg::safetensors {

/// A malformed, truncated or unsupported file.
struct format_error : error {
  using error::error;
};

/// Options of load: convert floating-point tensors to `dtype` (e.g. float16 weights to
/// float32); put the tensors on `device` ("" = the default device).
struct LoadOptions {
  std::optional<DType> dtype = std::nullopt;
  std::string device = "";
};

/// Where one tensor lies in a file, as its header says.
struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin, end; // into the data section
};

/// The parsed and validated header of a file of `file_size` bytes.
struct Header {
  std::vector<TensorInfo> tensors; // in file order of their data
  std::map<std::string, std::string> metadata;
  std::uint64_t data_start = 0; // 8 + header length
};

/// The bytes of a safetensors file holding `tensors` (and string metadata). Tensors are laid
/// out by decreasing item size, then name, so each one is aligned to its item size.
TG_API std::vector<unsigned char> save(const StateDict& tensors,
                                       const std::map<std::string, std::string>& metadata = {});
/// Parses and validates a file's header without reading its tensors.
TG_API Header read_header(std::span<const unsigned char> bytes);
/// The tensors of a safetensors file in memory (see LoadOptions for conversion).
TG_API StateDict load(std::span<const unsigned char> bytes, const LoadOptions& o = {});
/// The "__metadata__" strings of a file in memory.
TG_API std::map<std::string, std::string> metadata(std::span<const unsigned char> bytes);
TG_API void save_file(const StateDict& tensors, const std::string& path,
                      const std::map<std::string, std::string>& metadata = {});
TG_API StateDict load_file(const std::string& path, const LoadOptions& o = {});
TG_API std::map<std::string, std::string> load_metadata(const std::string& path);
/// Saves a module's state_dict.
TG_API void save_file(const nn::Module& m, const std::string& path,
                      const std::map<std::string, std::string>& metadata = {});
/// Loads a file into a module in place (load_state_dict: strict by default, values cast to the
/// parameters' dtypes).
TG_API nn::LoadResult load_file(nn::Module& m, const std::string& path, bool strict = true);

} // namespace tg::safetensors
