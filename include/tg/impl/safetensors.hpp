#pragma once
// Saving and loading safetensors (declared in state/safetensors.hpp).
#include <algorithm>

#include "../state/safetensors_format.hpp"
#include "../tensor/tensor.hpp"

namespace tg::safetensors {

static_assert(std::endian::native == std::endian::little,
              "tg.safetensors assumes a little-endian host");

TG_API std::vector<unsigned char> save(const StateDict& tensors,
                                       const std::map<std::string, std::string>& metadata) {
  struct Item {
    std::string name;
    Tensor t;
  };
  std::vector<Item> items;
  for (const auto& [name, t] : tensors) {
    if (!t.defined()) throw error("tg.safetensors.save: tensor \"" + name + "\" is undefined");
    if (name == "__metadata__")
      throw error("tg.safetensors.save: \"__metadata__\" is not a valid tensor name");
    items.push_back({name, t});
  }
  // std::sort: names are unique, so the order is total. (std::stable_sort does not compile under
  // Clang with libstdc++ 12 and -Werror: it calls the deprecated std::get_temporary_buffer.)
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    int sa = itemsize(a.t.dtype()), sb = itemsize(b.t.dtype());
    return sa != sb ? sa > sb : a.name < b.name;
  });
  // realize everything in one schedule, then read it back
  std::vector<Tensor> dense;
  for (Item& it : items) dense.push_back(it.t.detach().contiguous());
  {
    no_grad guard;
    tg::realize(dense);
  }
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) header += ",";
      first = false;
      json::quote(header, k);
      header += ":";
      json::quote(header, v);
    }
    header += "}";
  }
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Tensor& t = items[i].t;
    if (header.size() > 1) header += ",";
    json::quote(header, items[i].name);
    header += ":{\"dtype\":\"" + std::string(dtype_code(t.dtype())) + "\",\"shape\":[";
    auto s = t.shape();
    for (std::size_t k = 0; k < s.size(); ++k) {
      if (k) header += ',';
      header += std::to_string(s[k]);
    }
    std::uint64_t bytes = std::uint64_t(t.numel()) * std::uint64_t(itemsize(t.dtype()));
    header += "],\"data_offsets\":[";
    header += std::to_string(offset);
    header += ',';
    header += std::to_string(offset + bytes);
    header += "]}";
    offset += bytes;
  }
  header += "}";
  while (header.size() % 8) header.push_back(' ');
  std::vector<unsigned char> out(8 + header.size() + offset);
  std::uint64_t n = header.size();
  for (int k = 0; k < 8; ++k) out[std::size_t(k)] = static_cast<unsigned char>(n >> (8 * k));
  std::copy(header.begin(), header.end(), out.begin() + 8);
  std::size_t at = 8 + header.size();
  for (const Tensor& d : dense) {
    std::size_t bytes = std::size_t(d.numel()) * std::size_t(itemsize(d.dtype()));
    if (bytes) {
      const LazyPtr& node = d.lazy();
      const Buffer& b = *(node->op == Op::Buffer ? node->buffer : node->src.at(0)->buffer);
      b.device->copy_out(out.data() + at, b.ptr, bytes);
    }
    at += bytes;
  }
  return out;
}

TG_API Header read_header(std::span<const unsigned char> bytes) {
  return detail::parse_file_header(bytes);
}

TG_API StateDict load(std::span<const unsigned char> bytes, const LoadOptions& o) {
  Header h = detail::parse_file_header(bytes);
  StateDict out;
  std::vector<Tensor> converted;
  for (const TensorInfo& info : h.tensors) {
    Tensor t = detail::from_bytes(bytes.data() + h.data_start + info.begin, info, o.device);
    if (o.dtype && is_float(info.dtype) && info.dtype != *o.dtype) {
      if (!is_float(*o.dtype))
        throw error(std::string("tg.safetensors.load: cannot convert floating-point tensors to ") +
                    dtype_name(*o.dtype));
      t = t.cast(*o.dtype);
      converted.push_back(t);
    }
    out.insert(info.name, t);
  }
  if (!converted.empty()) tg::realize(converted);
  return out;
}

TG_API std::map<std::string, std::string> metadata(std::span<const unsigned char> bytes) {
  return detail::parse_file_header(bytes).metadata;
}

TG_API void save_file(const StateDict& tensors, const std::string& path,
                      const std::map<std::string, std::string>& meta) {
  std::vector<unsigned char> bytes = save(tensors, meta);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw error("tg.safetensors.save_file: cannot open " + path + " for writing");
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  if (!f) throw error("tg.safetensors.save_file: cannot write " + path);
}
TG_API StateDict load_file(const std::string& path, const LoadOptions& o) {
  std::vector<unsigned char> bytes = detail::read_file(path, "load_file");
  return detail::with_name(path, [&] { return load(bytes, o); });
}
TG_API std::map<std::string, std::string> load_metadata(const std::string& path) {
  std::vector<unsigned char> bytes = detail::read_file(path, "load_metadata");
  return detail::with_name(path, [&] { return metadata(bytes); });
}

TG_API void save_file(const nn::Module& m, const std::string& path,
                      const std::map<std::string, std::string>& meta) {
  save_file(m.state_dict(), path, meta);
}
TG_API nn::LoadResult load_file(nn::Module& m, const std::string& path, bool strict) {
  return m.load_state_dict(load_file(path), strict);
}

} // namespace tg::safetensors
