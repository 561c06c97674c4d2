// tg::safetensors: round trips for every dtype, state dicts of modules, conversion on load, and
// malformed or truncated files rejected with a clear error (never a crash).
#include <doctest/doctest.h>

#include <tg/tg.hpp>

#include <cstdio>
#include <cstring>
#include <random>

namespace st = tg::safetensors;
using tg::Tensor;

namespace {
using Bytes = std::vector<unsigned char>;

/// A file made by hand: header text and data bytes.
Bytes file(const std::string& header, const Bytes& data = {}) {
  Bytes out(8 + header.size() + data.size());
  std::uint64_t n = header.size();
  for (int k = 0; k < 8; ++k) out[std::size_t(k)] = static_cast<unsigned char>(n >> (8 * k));
  for (std::size_t i = 0; i < header.size(); ++i)
    out[8 + i] = static_cast<unsigned char>(header[i]);
  for (std::size_t i = 0; i < data.size(); ++i) out[8 + header.size() + i] = data[i];
  return out;
}

void rejects(const Bytes& b, const std::string& why) {
  CAPTURE(why);
  try {
    st::load(b);
    FAIL("accepted a malformed file");
  } catch (const st::format_error& e) {
    CHECK_MESSAGE(std::string(e.what()).find(why) != std::string::npos, e.what());
  }
}

std::string tmp_path(const char* name) { return std::string(TG_BINARY_DIR) + "/" + name; }

struct Small : tg::nn::Module {
  tg::nn::Conv2d conv{2, 3, 3};
  tg::nn::BatchNorm2d bn{3};
  tg::nn::Linear fc{3, 2, false};
  Small() {
    register_module("conv", conv);
    register_module("bn", bn);
    register_module("fc", fc);
  }
};
} // namespace

TEST_CASE("every dtype round-trips bit for bit, with metadata") {
  tg::StateDict sd;
  sd.insert("f64", Tensor::from_data(
                       std::vector<double>{1.5, -0.0, 1e300, INFINITY, -INFINITY, 3.14159265358979},
                       {2, 3}));
  sd.insert("f32", Tensor::from_data(std::vector<float>{1.5f, -2.25f, NAN, 1e-40f}, {4}));
  sd.insert("f16", Tensor::from_data(std::vector<float>{0.5f, -65504.f, 1e-7f}, {3}, tg::float16));
  sd.insert("bf16",
            Tensor::from_data(std::vector<float>{1.0f, -3e38f, 0.0078125f}, {1, 3}, tg::bfloat16));
  sd.insert("i8", Tensor::from_data(std::vector<std::int8_t>{-128, 0, 127}));
  sd.insert("i16", Tensor::from_data(std::vector<std::int16_t>{-32768, 1, 32767}));
  sd.insert("i32", Tensor::from_data(std::vector<std::int32_t>{-2147483647 - 1, 2147483647}));
  sd.insert("i64", Tensor::from_data(std::vector<std::int64_t>{INT64_MIN, INT64_MAX, 0}));
  sd.insert("u8", Tensor::from_data(std::vector<std::uint8_t>{0, 255}, {2, 1}));
  sd.insert("u16", Tensor::from_data(std::vector<std::uint16_t>{65535, 7}));
  sd.insert("u32", Tensor::from_data(std::vector<std::uint32_t>{4294967295u, 9}));
  sd.insert("u64", Tensor::from_data(std::vector<std::uint64_t>{18446744073709551615ull, 3}));
  sd.insert("bool", Tensor::from_data(std::vector<bool>{true, false, true}));
  sd.insert("scalar", Tensor::scalar(2.5f));
  sd.insert("empty", tg::zeros({0, 4}));
  sd.insert("view",
            tg::arange(12).reshape({3, 4}).T()); // a non-contiguous view is written row-major
  sd.insert("unicode \"name\"\n\xc3\xa9", tg::ones({2}));
  std::map<std::string, std::string> meta{{"format", "pt"}, {"note", "quote \" and \\ and \t tab"}};
  Bytes b = st::save(sd, meta);
  CHECK(st::metadata(b) == meta);
  tg::StateDict back = st::load(b);
  CHECK(back.size() == sd.size());
  for (auto& [k, v] : sd) {
    CAPTURE(k);
    REQUIRE(back.contains(k));
    const Tensor& r = back.at(k);
    CHECK(r.dtype() == v.dtype());
    CHECK(r.shape() == v.shape());
    if (v.numel() == 0) continue;
    // bit for bit: compare the raw bytes through an integer bitcast of the same width
    tg::DType bits = tg::itemsize(v.dtype()) == 1   ? tg::uint8
                     : tg::itemsize(v.dtype()) == 2 ? tg::uint16
                     : tg::itemsize(v.dtype()) == 4 ? tg::uint32
                                                    : tg::uint64;
    if (v.dtype() == tg::bool_)
      CHECK(r.to_vector<bool>() == v.to_vector<bool>());
    else
      CHECK(r.bitcast(bits).to_vector<std::uint64_t>() ==
            v.contiguous().bitcast(bits).to_vector<std::uint64_t>());
  }
  // the layout: sorted by item size then name, so every tensor is aligned
  st::Header h = st::read_header(b);
  CHECK(h.data_start % 8 == 0);
  for (const st::TensorInfo& t : h.tensors)
    CHECK(t.begin % std::uint64_t(tg::itemsize(t.dtype)) == 0);
  // a file on disk
  std::string path = tmp_path("test_safetensors_all.safetensors");
  st::save_file(sd, path, meta);
  CHECK(st::load_file(path).at("i64").to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{INT64_MIN, INT64_MAX, 0});
  CHECK(st::load_metadata(path).at("format") == "pt");
  std::remove(path.c_str());
  CHECK_THROWS_WITH_AS(st::load_file(tmp_path("no_such_file.safetensors")),
                       doctest::Contains("cannot open"), tg::error);
}

TEST_CASE("a module's state dict round-trips; conversion on load when asked") {
  tg::manual_seed(1);
  Small a;
  a.bn(a.conv(tg::randn({2, 2, 5, 5}))); // moves the running statistics
  tg::manual_seed(2);
  Small b;
  std::string path = tmp_path("test_safetensors_model.safetensors");
  st::save_file(a, path, {{"epoch", "3"}});
  st::load_file(b, path);
  for (auto& [k, v] : a.state_dict()) {
    CAPTURE(k);
    if (v.dtype() == tg::int64)
      CHECK(b.state_dict().at(k).item<std::int64_t>() == v.item<std::int64_t>());
    else
      CHECK(b.state_dict().at(k).to_vector<float>() == v.to_vector<float>());
  }
  CHECK(b.bn.num_batches_tracked.item<std::int64_t>() == 1);
  // float16 on disk, float32 in memory
  tg::StateDict half;
  for (auto& [k, v] : a.state_dict())
    half.insert(k, tg::is_float(v.dtype()) ? v.cast(tg::float16) : v);
  Bytes hb = st::save(half);
  tg::StateDict as16 = st::load(hb), as32 = st::load(hb, {.dtype = tg::float32});
  CHECK(as16.at("conv.weight").dtype() == tg::float16);
  CHECK(as32.at("conv.weight").dtype() == tg::float32);
  CHECK(as32.at("bn.num_batches_tracked").dtype() == tg::int64); // integers are left alone
  auto w32 = as32.at("conv.weight").to_vector<float>(), w = a.conv.weight.to_vector<float>();
  for (std::size_t i = 0; i < w.size(); ++i) CHECK(w32[i] == doctest::Approx(w[i]).epsilon(1e-3));
  b.load_state_dict(as16); // load_state_dict casts to the parameters' dtype too
  CHECK(b.conv.weight.dtype() == tg::float32);
  // strict loading of a file with a missing key names it
  tg::StateDict partial = a.state_dict();
  partial.erase("fc.weight");
  st::save_file(partial, path);
  CHECK_THROWS_WITH_AS(st::load_file(b, path), doctest::Contains("\"fc.weight\""), tg::error);
  CHECK(st::load_file(b, path, false).missing_keys == std::vector<std::string>{"fc.weight"});
  std::remove(path.c_str());
}

TEST_CASE("malformed and truncated files are rejected with a clear error") {
  const Bytes f32x2 = {0, 0, 128, 63, 0, 0, 0, 64}; // 1.0f, 2.0f
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  REQUIRE(st::load(file(ok, f32x2)).at("a").to_vector<float>() == std::vector<float>{1, 2});
  REQUIRE(st::load(file(ok + "      ", f32x2)).size() == 1); // space padding is fine

  rejects({}, "too short for the 8-byte header length");
  rejects({1, 2, 3}, "too short");
  rejects(Bytes{255, 255, 255, 255, 255, 255, 255, 255}, "larger than the 100 MB limit");
  Bytes cut = file(ok, f32x2);
  cut.resize(20);
  rejects(cut, "truncated: the header length is");
  rejects(file(ok, {0, 0, 128, 63}), "truncated: the tensors need 8 bytes of data, the file has 4");
  rejects(file(ok, {0, 0, 128, 63, 0, 0, 0, 64, 9}), "trailing bytes");
  rejects(file("", {}), "does not start with '{'");
  rejects(file("[1, 2]"), "does not start with '{'");
  rejects(file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", f32x2), "expected '}'");
  rejects(file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},})", f32x2),
          "expected a string key");
  rejects(file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}} x)", f32x2),
          "after the JSON value");
  rejects(
      file(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[0],"data_offsets":[8,8]}})",
          f32x2),
      "duplicate key");
  rejects(file(R"({"a":[1]})"), "entry is not an object");
  rejects(file(R"({"a":{"dtype":"F32","shape":[2]}})", f32x2),
          "needs \"dtype\", \"shape\" and \"data_offsets\"");
  rejects(file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1}})", f32x2),
          "unknown field \"extra\"");
  rejects(file(R"({"a":{"dtype":"F31","shape":[2],"data_offsets":[0,8]}})", f32x2),
          "not a safetensors dtype");
  rejects(file(R"({"a":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}})", f32x2),
          "not supported by tg");
  rejects(file(R"({"a":{"dtype":32,"shape":[2],"data_offsets":[0,8]}})", f32x2),
          "dtype is not a string");
  rejects(file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", f32x2),
          "non-negative integer");
  rejects(file(R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", f32x2),
          "non-negative integer");
  rejects(file(R"({"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", f32x2),
          "shape is not an array");
  rejects(file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", f32x2),
          "needs 12 bytes");
  rejects(
      file(
          R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})",
          f32x2),
      "too many");
  rejects(file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", f32x2),
          "end before they begin");
  rejects(file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", f32x2),
          "data_offsets must be [begin, end]");
  rejects(file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,99999999999999999999999]}})",
               f32x2),
          "too large");
  rejects(file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f32x2), "leave a gap");
  rejects(
      file(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
          f32x2),
      "overlap");
  rejects(file(R"({"__metadata__":{"k":1},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
               f32x2),
          "not a string");
  rejects(file(R"({"a\q":{}})"), "invalid escape");
  rejects(file(R"({"a\ud800":{}})"), "unpaired surrogate");
  rejects(file("{\"a\x01\":{}}"), "control character");
  rejects(file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})" + std::string("\x00", 1) +
                   "}",
               f32x2),
          "expected '}'");
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "{\"a\":";
  rejects(file(deep), "nested too deeply");
  rejects(file(R"({"a":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}})", f32x2),
          "expected ']'");
  rejects(file(R"({"a":tru})"), "unexpected character");
  // load_file names the file
  std::string path = tmp_path("test_safetensors_bad.safetensors");
  {
    Bytes bad = file(ok, {1});
    std::FILE* f = std::fopen(path.c_str(), "wb");
    std::fwrite(bad.data(), 1, bad.size(), f);
    std::fclose(f);
  }
  std::string want = path + ": truncated";
  CHECK_THROWS_WITH_AS(st::load_file(path), doctest::Contains(want.c_str()), st::format_error);
  std::remove(path.c_str());
}

TEST_CASE("every truncation and random corruptions of a valid file: an error or a valid load, "
          "never a crash") {
  tg::StateDict sd;
  sd.insert("weight", tg::randn({3, 4}));
  sd.insert("bias", tg::randn({4}, tg::float16));
  sd.insert("steps", Tensor::from_data(std::vector<std::int64_t>{5}, {1}));
  sd.insert("mask", Tensor::from_data(std::vector<bool>{true, false}));
  Bytes good = st::save(sd, {{"k", "v"}});
  for (std::size_t n = 0; n < good.size(); ++n) {
    Bytes cut(good.begin(), good.begin() + std::ptrdiff_t(n));
    CAPTURE(n);
    CHECK_THROWS_AS(st::load(cut), st::format_error);
  }
  std::mt19937 rng(7);
  int accepted = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Bytes b = good;
    int flips = 1 + int(rng() % 3);
    for (int f = 0; f < flips; ++f)
      b[rng() % b.size()] ^= static_cast<unsigned char>(1u << (rng() % 8));
    try {
      tg::StateDict r = st::load(b);
      for (auto& [k, v] : r) v.realize(); // a file that parses loads fully
      ++accepted;
    } catch (const st::format_error&) {
    }
  }
  CHECK(accepted > 0); // flips in the data section keep the file valid
  CHECK(accepted < 400);
}
