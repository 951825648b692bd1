// A small dataflow runtime, instrumented with the strata API.
//
// A model-like DAG of real compute nodes (convolution, matrix multiplies,
// elementwise ops, a reduction) runs on a thread pool: a node becomes ready when
// all of its inputs are computed, and workers pick ready nodes from a shared
// queue. Each iteration of the graph is one step. With no tracer attached every
// strata call is one relaxed load; under `strata record` each node is a span,
// each producer->consumer edge a flow, and the ready-queue depth a counter.
//
//   dataflow [--steps N] [--threads T] [--size S]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "strata/strata.hpp"

namespace {

using Tensor = std::vector<float>;

struct Node {
  std::string name;
  uint32_t name_id = 0;
  std::vector<int> inputs;
  std::vector<int> consumers;
  std::function<void(const std::vector<const Tensor*>&, Tensor&)> fn;
  Tensor out;
  std::atomic<int> pending{0};
};

// --- real kernels -------------------------------------------------------------

void MatMul(const Tensor& a, const Tensor& b, Tensor& c, int n) {
  c.assign(static_cast<size_t>(n) * n, 0.0f);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k) {
      float aik = a[static_cast<size_t>(i) * n + k];
      const float* brow = &b[static_cast<size_t>(k) * n];
      float* crow = &c[static_cast<size_t>(i) * n];
      for (int j = 0; j < n; ++j) crow[j] += aik * brow[j];
    }
}

// 3x3 convolution, single channel, "same" padding.
void Conv3x3(const Tensor& in, Tensor& out, int n, const float* w) {
  out.assign(static_cast<size_t>(n) * n, 0.0f);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      float s = 0;
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          int yy = y + dy, xx = x + dx;
          if (yy < 0 || yy >= n || xx < 0 || xx >= n) continue;
          s += in[static_cast<size_t>(yy) * n + xx] * w[(dy + 1) * 3 + (dx + 1)];
        }
      out[static_cast<size_t>(y) * n + x] = s;
    }
}

void Relu(const Tensor& in, Tensor& out) {
  out.resize(in.size());
  for (size_t i = 0; i < in.size(); ++i) out[i] = in[i] > 0 ? in[i] : 0;
}

void Add(const Tensor& a, const Tensor& b, Tensor& out) {
  out.resize(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
}

void Tanh(const Tensor& in, Tensor& out) {
  out.resize(in.size());
  for (size_t i = 0; i < in.size(); ++i) out[i] = std::tanh(in[i]);
}

void Reduce(const Tensor& in, Tensor& out) {
  double s = 0;
  for (float v : in) s += v;
  out.assign(1, static_cast<float>(s / static_cast<double>(in.size())));
}

// --- the graph ------------------------------------------------------------------

class Graph {
 public:
  int Add(std::string name, std::vector<int> inputs, std::function<void(const std::vector<const Tensor*>&, Tensor&)> fn) {
    auto n = std::make_unique<Node>();
    n->name = std::move(name);
    n->inputs = std::move(inputs);
    n->fn = std::move(fn);
    nodes_.push_back(std::move(n));
    int id = static_cast<int>(nodes_.size()) - 1;
    for (int in : nodes_.back()->inputs) nodes_[static_cast<size_t>(in)]->consumers.push_back(id);
    return id;
  }
  std::vector<std::unique_ptr<Node>>& nodes() { return nodes_; }

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
};

class Executor {
 public:
  Executor(Graph& g, int threads) : g_(g) {
    for (auto& n : g_.nodes()) n->name_id = strata_intern(n->name.c_str());
    queue_depth_id_ = strata_intern("ready_queue_depth");
    for (int i = 0; i < threads; ++i)
      workers_.emplace_back([this, i] {
        std::string tn = "worker-" + std::to_string(i);
        strata_thread_name(tn.c_str());
        Work();
      });
  }

  ~Executor() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

  // Runs the whole graph once; returns when every node has run.
  void RunOnce(uint64_t step) {
    step_ = step;
    std::unique_lock<std::mutex> lk(mu_);
    remaining_ = static_cast<int>(g_.nodes().size());
    for (size_t i = 0; i < g_.nodes().size(); ++i) {
      auto& n = g_.nodes()[i];
      n->pending.store(static_cast<int>(n->inputs.size()));
      if (n->inputs.empty()) ready_.push_back(static_cast<int>(i));
    }
    strata_counter(queue_depth_id_, static_cast<double>(ready_.size()));
    cv_.notify_all();
    done_cv_.wait(lk, [this] { return remaining_ == 0; });
  }

 private:
  // Unique per (step, edge) for graphs of < 256 nodes; small ids are stored in 4 bytes.
  uint64_t FlowId(int producer, int consumer) const {
    return step_ * 65536 + static_cast<uint64_t>(producer) * 256 + static_cast<uint64_t>(consumer);
  }

  void Work() {
    for (;;) {
      int id;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [this] { return stop_ || !ready_.empty(); });
        if (stop_) return;
        id = ready_.front();
        ready_.pop_front();
        strata_counter(queue_depth_id_, static_cast<double>(ready_.size()));
      }
      Node& n = *g_.nodes()[static_cast<size_t>(id)];
      {
        strata::ScopedSpan span([&n] { return n.name_id; });
        for (int in : n.inputs) strata_flow_in(FlowId(in, id));
        std::vector<const Tensor*> ins;
        for (int in : n.inputs) ins.push_back(&g_.nodes()[static_cast<size_t>(in)]->out);
        n.fn(ins, n.out);
        for (int c : n.consumers) strata_flow_out(FlowId(id, c));
      }
      std::vector<int> newly_ready;
      for (int c : n.consumers)
        if (g_.nodes()[static_cast<size_t>(c)]->pending.fetch_sub(1) == 1) newly_ready.push_back(c);
      std::lock_guard<std::mutex> lk(mu_);
      for (int c : newly_ready) ready_.push_back(c);
      if (!newly_ready.empty()) {
        strata_counter(queue_depth_id_, static_cast<double>(ready_.size()));
        cv_.notify_all();
      }
      if (--remaining_ == 0) done_cv_.notify_all();
    }
  }

  Graph& g_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<int> ready_;
  int remaining_ = 0;
  bool stop_ = false;
  uint64_t step_ = 0;
  uint32_t queue_depth_id_ = 0;
};

// A two-branch "model": input -> conv -> relu -> {matmul branch A, matmul branch B}
// -> add -> tanh -> matmul (head) -> reduce (loss).
void BuildModel(Graph& g, int n) {
  auto rnd = [n](uint32_t seed) {
    Tensor t(static_cast<size_t>(n) * n);
    uint32_t x = seed;
    for (auto& v : t) {
      x = x * 1664525u + 1013904223u;
      v = static_cast<float>(x >> 8) / static_cast<float>(1u << 24) - 0.5f;
    }
    return t;
  };
  auto wa = std::make_shared<Tensor>(rnd(2)), wb = std::make_shared<Tensor>(rnd(3)), wh = std::make_shared<Tensor>(rnd(4));
  static const float kernel[9] = {0.0625f, 0.125f, 0.0625f, 0.125f, 0.25f, 0.125f, 0.0625f, 0.125f, 0.0625f};
  int input = g.Add("load_input", {}, [rnd](const auto&, Tensor& out) { out = rnd(1); });
  int conv = g.Add("conv3x3", {input}, [n](const auto& in, Tensor& out) { Conv3x3(*in[0], out, n, kernel); });
  int relu = g.Add("relu", {conv}, [](const auto& in, Tensor& out) { Relu(*in[0], out); });
  int ma = g.Add("matmul_a", {relu}, [n, wa](const auto& in, Tensor& out) { MatMul(*in[0], *wa, out, n); });
  int mb = g.Add("matmul_b", {relu}, [n, wb](const auto& in, Tensor& out) { MatMul(*in[0], *wb, out, n); });
  int add = g.Add("add", {ma, mb}, [](const auto& in, Tensor& out) { Add(*in[0], *in[1], out); });
  int th = g.Add("tanh", {add}, [](const auto& in, Tensor& out) { Tanh(*in[0], out); });
  int head = g.Add("matmul_head", {th}, [n, wh](const auto& in, Tensor& out) { MatMul(*in[0], *wh, out, n); });
  g.Add("reduce_loss", {head}, [](const auto& in, Tensor& out) { Reduce(*in[0], out); });
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 50, threads = 2, size = 128;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> int {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "dataflow: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::atoi(argv[++i]);
    };
    if (a == "--steps") steps = next();
    else if (a == "--threads") threads = next();
    else if (a == "--size") size = next();
    else {
      std::fprintf(stderr, "usage: dataflow [--steps N] [--threads T] [--size S]\n");
      return 2;
    }
  }
  if (steps < 1 || threads < 1 || size < 4) {
    std::fprintf(stderr, "dataflow: steps, threads >= 1 and size >= 4\n");
    return 2;
  }
  Graph g;
  BuildModel(g, size);
  Executor ex(g, threads);
  auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    strata::Step step(static_cast<uint64_t>(s));
    ex.RunOnce(static_cast<uint64_t>(s));
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  float loss = g.nodes().back()->out.empty() ? 0.0f : g.nodes().back()->out[0];
  std::printf("dataflow: %d steps of %zu nodes on %d threads in %.3f s (%.2f ms/step), loss %.6f\n", steps,
              g.nodes().size(), threads, secs, 1e3 * secs / steps, static_cast<double>(loss));
  return 0;
}
