// A tiny causal transformer (GPT-style, character level) trained on a text every Debian machine
// has, /usr/share/common-licenses/GPL-3: prints the loss as it falls and then a generated sample.
//
//   build/examples/example_char_transformer                 # 600 steps, then 400 characters
//   build/examples/example_char_transformer --steps 2000 --text FILE
//   TG_QUICK=1 build/examples/example_char_transformer      # CI: 120 small steps, checks the loss
//   falls
//
// It uses the whole library: nn modules (Embedding, LayerNorm, MultiheadAttention with a causal
// mask, Linear, GELU), cross_entropy, AdamW with two parameter groups (weight decay on the
// matrices only), a linear warm-up followed by cosine decay, clip_grad_norm_, and a training step
// compiled with tg::jit (the learning rate changes between replays through the optimizer's lr
// tensor). Exit status: 0 when the loss fell, 1 otherwise.
#include <tg/tg.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace nn = tg::nn;
namespace F = tg::nn::functional;
namespace optim = tg::optim;
using tg::Tensor;

namespace {

struct Config {
  std::int64_t vocab = 0, block = 64, dim = 64, heads = 4, layers = 2, batch = 32;
  int steps = 600, sample = 400;
  double lr = 3e-3;
};

/// Pre-norm transformer block: x + attn(ln(x)), then x + mlp(ln(x)).
struct Block : nn::Module {
  nn::LayerNorm ln1, ln2;
  nn::MultiheadAttention attn;
  nn::Linear up, down;
  Block(const Config& c)
      : ln1(c.dim), ln2(c.dim), attn(c.dim, c.heads, 0.0, true, /*batch_first=*/true),
        up(c.dim, 4 * c.dim), down(4 * c.dim, c.dim) {
    register_module("ln1", ln1);
    register_module("attn", attn);
    register_module("ln2", ln2);
    register_module("up", up);
    register_module("down", down);
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = ln1(x);
    Tensor y = x + attn.forward(h, h, h, Tensor(), /*is_causal=*/true);
    return y + down(up(ln2(y)).gelu("tanh"));
  }
  std::string type_name() const override { return "Block"; }
};

struct CharTransformer : nn::Module {
  nn::Embedding tok, pos;
  nn::ModuleList blocks;
  nn::LayerNorm ln;
  nn::Linear head;
  Tensor positions; // [block] int64, a constant
  CharTransformer(const Config& c)
      : tok(c.vocab, c.dim), pos(c.block, c.dim), ln(c.dim), head(c.dim, c.vocab) {
    for (std::int64_t i = 0; i < c.layers; ++i) blocks.push_back(Block(c));
    register_module("tok", tok);
    register_module("pos", pos);
    register_module("blocks", blocks);
    register_module("ln", ln);
    register_module("head", head);
    positions = tg::arange(double(c.block));
  }
  /// idx [B, T] -> logits [B, T, vocab].
  Tensor forward(const Tensor& idx) override {
    Tensor x = tok(idx) + pos(positions);
    for (auto& b : blocks) x = (*b)(x);
    return head(ln(x));
  }
  std::string type_name() const override { return "CharTransformer"; }
};

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "";
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

} // namespace

int main(int argc, char** argv) {
  Config c;
  std::string path = "/usr/share/common-licenses/GPL-3";
  bool quick = false;
  if (const char* q = std::getenv("TG_QUICK"))
    quick = std::string(q) != "0" && std::string(q) != "";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--text")
      path = next();
    else if (a == "--steps")
      c.steps = std::stoi(next());
    else if (a == "--sample")
      c.sample = std::stoi(next());
    else if (a == "--lr")
      c.lr = std::stod(next());
    else if (a == "--quick")
      quick = true;
    else {
      std::fprintf(stderr, "usage: %s [--text FILE] [--steps N] [--sample N] [--lr X] [--quick]\n",
                   argv[0]);
      return 2;
    }
  }
  if (quick) {
    c.steps = 120;
    c.batch = 16;
    c.block = 32;
    c.sample = 120;
  }
  std::string text = read_text(path);
  if (text.size() < std::size_t(c.block) + 2) {
    std::printf(
        "cannot read a text of at least %lld characters from %s (Debian: package base-files)\n",
        (long long)c.block + 2, path.c_str());
    return 77;
  }
  // the characters of the text are the vocabulary
  std::vector<char> chars(text.begin(), text.end());
  std::sort(chars.begin(), chars.end());
  chars.erase(std::unique(chars.begin(), chars.end()), chars.end());
  std::map<char, std::int64_t> id;
  for (std::size_t i = 0; i < chars.size(); ++i) id[chars[i]] = std::int64_t(i);
  std::vector<std::int64_t> data;
  for (char ch : text) data.push_back(id[ch]);
  c.vocab = std::int64_t(chars.size());

  tg::manual_seed(0);
  CharTransformer model(c);
  // weight decay on the matrices (Linear and attention weights), not on biases, norms, embeddings
  std::vector<Tensor> decay, no_decay;
  for (auto& [name, p] : model.named_parameters())
    ((p.ndim() == 2 && name.find("tok.") != 0 && name.find("pos.") != 0) ? decay : no_decay)
        .push_back(p);
  optim::AdamW opt({{decay, std::nullopt, 0.1}, {no_decay, std::nullopt, 0.0}},
                   {.lr = c.lr, .betas = {0.9, 0.99}});
  int warmup = std::max(1, c.steps / 10);
  auto warm = std::make_shared<optim::LinearLR>(opt, 0.1, 1.0, warmup);
  auto cosine = std::make_shared<optim::CosineAnnealingLR>(opt, c.steps - warmup, c.lr / 10);
  optim::SequentialLR schedule(opt, {warm, cosine}, {warmup});

  std::printf("char transformer: %zu characters of %s, vocabulary %lld; %lld layers, dim %lld, "
              "%lld heads, context %lld, "
              "%lld parameters; %d steps of batch %lld on %s%s\n",
              text.size(), path.c_str(), (long long)c.vocab, (long long)c.layers, (long long)c.dim,
              (long long)c.heads, (long long)c.block, (long long)model.num_parameters(), c.steps,
              (long long)c.batch, tg::default_device().c_str(), quick ? " (quick mode)" : "");

  auto step = tg::jit([&](Tensor x, Tensor y) {
    opt.zero_grad();
    Tensor logits = model(x);
    Tensor loss = F::cross_entropy(logits.reshape({c.batch * c.block, c.vocab}),
                                   y.reshape({c.batch * c.block}));
    loss.realize();
    loss.backward();
    optim::clip_grad_norm_(model.parameters(), 1.0);
    opt.step();
    return loss;
  });

  std::mt19937_64 rng(1);
  std::uniform_int_distribution<std::size_t> start(0, data.size() - std::size_t(c.block) - 1);
  std::vector<float> losses;
  auto t0 = std::chrono::steady_clock::now(), t2 = t0;
  int every = quick ? 20 : 50;
  double window = 0;
  for (int s = 1; s <= c.steps; ++s) {
    std::vector<std::int64_t> xs, ys;
    for (std::int64_t b = 0; b < c.batch; ++b) {
      std::size_t at = start(rng);
      xs.insert(xs.end(), data.begin() + std::ptrdiff_t(at),
                data.begin() + std::ptrdiff_t(at) + c.block);
      ys.insert(ys.end(), data.begin() + std::ptrdiff_t(at) + 1,
                data.begin() + std::ptrdiff_t(at) + c.block + 1);
    }
    float loss =
        step(Tensor::from_data(xs, {c.batch, c.block}), Tensor::from_data(ys, {c.batch, c.block}))
            .item<float>();
    losses.push_back(loss);
    window += loss;
    auto now = std::chrono::steady_clock::now();
    if (s == 2) t2 = now; // steps 1 and 2 compile the kernels and capture them
    if (s % every == 0 || s == 1) {
      if (s == 1)
        std::printf("  step %5d/%d  loss %.4f  lr %.2e  (%.1f s: compiling the step's kernels)\n",
                    s, c.steps, double(loss), opt.lr(0),
                    std::chrono::duration<double>(now - t0).count());
      else
        std::printf("  step %5d/%d  loss %.4f  lr %.2e  %.0f ms/step\n", s, c.steps, window / every,
                    opt.lr(0),
                    1e3 * std::chrono::duration<double>(now - t2).count() / double(s - 2));
      std::fflush(stdout);
      window = 0;
    }
    schedule.step();
  }

  // generation: a window of the last `block` characters, sampled at temperature 0.8
  model.eval();
  tg::no_grad guard;
  auto logits_of = tg::jit([&](Tensor x) { return model(x).index({0, -1}); });
  std::size_t at = start(rng);
  std::vector<std::int64_t> ctx(data.begin() + std::ptrdiff_t(at),
                                data.begin() + std::ptrdiff_t(at) + c.block);
  std::string prompt, sample;
  for (std::int64_t t : ctx) prompt += chars[std::size_t(t)];
  std::mt19937 gen(7);
  for (int i = 0; i < c.sample; ++i) {
    auto l = logits_of(Tensor::from_data(ctx, {1, c.block})).to_vector<float>();
    float mx = *std::max_element(l.begin(), l.end());
    std::vector<double> p;
    for (float v : l) p.push_back(std::exp((double(v) - mx) / 0.8));
    std::int64_t next =
        std::int64_t(std::discrete_distribution<std::size_t>(p.begin(), p.end())(gen));
    sample += chars[std::size_t(next)];
    ctx.erase(ctx.begin());
    ctx.push_back(next);
  }
  std::printf("\n--- prompt (from the text) ---\n%s\n--- generated ---\n%s\n---\n", prompt.c_str(),
              sample.c_str());

  std::size_t k = std::min<std::size_t>(20, losses.size() / 2);
  double first =
      std::accumulate(losses.begin(), losses.begin() + std::ptrdiff_t(k), 0.0) / double(k);
  double last = std::accumulate(losses.end() - std::ptrdiff_t(k), losses.end(), 0.0) / double(k);
  bool fell = last < 0.75 * first;
  std::printf("mean loss of the first %zu steps %.3f, of the last %zu %.3f: %s\n", k, first, k,
              last, fell ? "the loss fell" : "the loss did NOT fall");
  return fell ? 0 : 1;
}
