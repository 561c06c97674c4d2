// Golden kernels: for a fixed set of graphs, the IR after every pass of the pass list and the
// rendered source, for each target (C on the CPU, CUDA, GLSL, WGSL), compared byte for byte with
// tests/golden/<graph>.<target>.txt. A change to a pass or a renderer shows up here as a diff.
// TG_GOLDEN=update rewrites the files (then review them with git diff).
#include <doctest/doctest.h>
#include <tg/engine/build.hpp> // white-box: PassDump, compile_kernel, build_graph
#include <tg/schedule.hpp>
#include <tg/tg.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace {

/// The graphs: each a function of nothing, so that its graph is the same in every run.
struct Case {
  const char* name;
  std::function<tg::Tensor()> make;
};

tg::Tensor input(std::vector<std::int64_t> shape, tg::DType dtype = tg::float32) {
  tg::Shape s(shape.begin(), shape.end());
  return tg::zeros(s, tg::TensorOptions(dtype, "CPU")).realize(); // a buffer; values unused
}

tg::Tensor elementwise_chain() { return (input({64, 32}) * 2.0f + 1.0f).relu().exp2(); }
tg::Tensor reduce_epilogue() { return (input({16, 100}) * input({16, 100})).sum(1).sqrt() + 1.0f; }
tg::Tensor matmul_tile() { return (input({64, 48}).matmul(input({48, 32})) + input({32})).relu(); }
// enough outputs for GPU shared-memory tiles (codegen/shared_tiles.hpp): 16 x 16 blocks here
tg::Tensor matmul_shared() {
  return (input({96, 40}).matmul(input({40, 80})) + input({80})).relu();
}
tg::Tensor softmax() { return input({8, 200}).softmax(1); }
tg::Tensor conv2d() { return tg::nn::functional::conv2d(input({2, 3, 8, 8}), input({4, 3, 3, 3})); }
tg::Tensor symbolic_size() {
  return (input({12}).reshape({tg::sym("batch", 1, 64, 4), 3}) * 3.0f).sum(1);
}
tg::Tensor float16() { return (input({32, 16}, tg::float16) * 0.5f).sum(1); }
tg::Tensor int8() { return (input({64}, tg::int8) * 3).maximum(input({64}, tg::int8)); }

const std::vector<Case>& cases() {
  static const std::vector<Case> c{{"elementwise_chain", elementwise_chain},
                                   {"reduce_epilogue", reduce_epilogue},
                                   {"matmul_tile", matmul_tile},
                                   {"matmul_shared", matmul_shared},
                                   {"softmax", softmax},
                                   {"conv2d", conv2d},
                                   {"symbolic_size", symbolic_size},
                                   {"float16", float16},
                                   {"int8", int8}};
  return c;
}

struct TargetCase {
  const char* name;
  tg::Target target;
};
const std::vector<TargetCase>& targets() {
  static const std::vector<TargetCase> t{{"c", tg::Target::cpu()},
                                         {"cuda", tg::Target::cuda()},
                                         {"glsl", tg::Target::glsl()},
                                         {"wgsl", tg::Target::wgsl()}};
  return t;
}

/// Every pass's IR and the sources, for one graph and target (no timings: the text is stable).
std::string pass_dump(const tg::Tensor& t, const tg::Target& target) {
  tg::ScheduleInfo info = tg::schedule({t}, target); // (for the graph, as realize builds it)
  tg::PassDump log(nullptr, /*times=*/false);
  log.text += std::string(tg::dump(info.graph).view());
  tg::Schedule s = tg::schedule_graph(info.graph, target, log);
  tg::NodeFlags keep(info.graph.size(), false);
  for (int o : info.graph.outputs) keep[std::size_t(o)] = true;
  tg::plan_buffers(info.graph, s, keep, log);
  for (std::size_t k = 0; k < s.kernels.size(); ++k) {
    log.kernel = k;
    tg::compile_kernel(info.graph, s, k, target, log);
  }
  return log.text;
}

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

} // namespace

TEST_CASE("golden kernels: the IR after every pass and the source, byte for byte") {
  const char* mode = std::getenv("TG_GOLDEN");
  const bool update = mode && std::string(mode) == "update";
  for (const Case& c : cases())
    for (const TargetCase& t : targets()) {
      const std::string path =
          std::string(TG_TESTS_DIR) + "/golden/" + c.name + "." + t.name + ".txt";
      CAPTURE(path);
      const std::string got = pass_dump(c.make(), t.target);
      if (update) {
        std::filesystem::create_directories(std::filesystem::path(path).parent_path());
        std::ofstream f(path, std::ios::binary);
        f << got;
        CHECK_MESSAGE(f.good(), "cannot write " << path);
        continue;
      }
      const std::string want = read(path);
      if (want.empty()) {
        FAIL_CHECK("missing golden file (run the test with TG_GOLDEN=update): " << path);
        continue;
      }
      if (got != want) {
        // the first line that differs, so that the failure says where
        std::istringstream a(got), b(want);
        std::string la, lb;
        int line = 1;
        while (std::getline(a, la) && std::getline(b, lb) && la == lb) ++line;
        FAIL_CHECK(path << " differs at line " << line << ":\n  got:  " << la << "\n  want: " << lb
                        << "\n(TG_GOLDEN=update rewrites it; review the diff)");
      }
    }
  if (update) MESSAGE("golden files rewritten under " << TG_TESTS_DIR << "/golden");
}

TEST_CASE("golden kernels: what tg::schedule shows is what the pass list makes") {
  // tg::schedule's programs and sources are the pass list's, for every target
  for (const TargetCase& t : targets()) {
    tg::Tensor y = cases()[3].make(); // softmax
    tg::ScheduleInfo info = tg::schedule({y}, t.target);
    for (std::size_t k = 0; k < info.kernels(); ++k) {
      tg::KernelCode code = tg::compile_kernel(info.graph, info.schedule, k, t.target);
      CHECK(info.sources[k] == code.source.view());
      CHECK(tg::dump(info.programs[k]).view() == tg::dump(code.program).view());
    }
  }
  // and the CPU device compiles exactly the source tg::schedule shows for it
  tg::Tensor z = (input({4, 5}) + 1.0f).exp().sum(1);
  tg::ScheduleInfo info = tg::schedule({z}, "CPU");
  REQUIRE(info.kernels() == 1);
  tg::detail::GraphBuild b = tg::detail::build_graph({z.lazy()});
  auto plan = tg::detail::plan_for(b.graph, b.keep, tg::device("CPU"), 0);
  REQUIRE(plan->runners.size() == 1);
  CHECK(plan->runners[0]->source == info.sources[0]);
}
