#include "train/distributed.h"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <sstream>
#include <thread>

#include <torch/version.h>

#include "core/error.h"
#include "core/options.h"

// c10d with either backend: the TCP store, the process group and zoo's gradient buckets.
#define ZOO_WITH_C10D (ZOO_WITH_GLOO || ZOO_WITH_NCCL)
#if ZOO_WITH_C10D
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#if ZOO_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if ZOO_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace zoo {

std::vector<std::string> distributed_backends() {
  std::vector<std::string> b;
#if ZOO_WITH_GLOO
  b.push_back("gloo");
#endif
#if ZOO_WITH_NCCL
  b.push_back("nccl");
#endif
  return b;
}

namespace {

[[maybe_unused]] std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string resolve_backend(const std::string& asked, const torch::Device& device, const LaunchEnv& env) {
  const std::string backend = asked == "auto" ? (device.is_cuda() ? "nccl" : "gloo") : asked;
  const auto have = distributed_backends();
  if (std::find(have.begin(), have.end(), backend) == have.end())
    throw Error(cat("rank ", env.rank, ": a distributed launch (", env.launcher, ", WORLD_SIZE=", env.world_size,
                    ") needs c10d's ", backend, " backend, which this build of zoo lacks",
                    have.empty() ? std::string(" (no c10d at all: build against a LibTorch with distributed support "
                                               "and gloo headers, e.g. Debian's libtorch-dev + libgloo-dev)")
                                 : cat(" (it has: ", join(have), "; set train.ddp_backend)")));
  if (backend == "nccl" && !device.is_cuda())
    throw Error(cat("rank ", env.rank, ": train.ddp_backend=nccl needs a CUDA device (this process trains on ",
                    device.str(), "); use gloo"));
  return backend;
}

// Fails at once, naming the variable, when MASTER_ADDR does not resolve (instead of
// retrying until the timeout).
void check_resolves(const LaunchEnv& env) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(env.master_addr.c_str(), nullptr, &hints, &found);
  if (found) freeaddrinfo(found);
  if (rc != 0)
    throw Error(cat("rank ", env.rank, ": MASTER_ADDR='", env.master_addr, "' does not resolve (", gai_strerror(rc),
                    "); set it to the host name or address of the machine that runs rank 0"));
}

#if ZOO_WITH_C10D

#if TORCH_VERSION_MAJOR >= 2
using GroupBase = c10d::Backend;
#else
using GroupBase = c10d::ProcessGroup;
#endif

// Gradient buckets: flat buffers of about bucket_cap_mb, filled in the order backward
// produces gradients (the reverse of the parameters' order) and all-reduced in bucket order
// on every rank, each as soon as it and the buckets before it are full.
struct Buckets {
  struct Bucket {
    std::vector<size_t> params;
    std::vector<int64_t> offsets;
    torch::Tensor buffer;
    size_t ready = 0;
    c10::intrusive_ptr<c10d::Work> work;
  };
  std::vector<torch::Tensor> params;
  std::vector<size_t> bucket_of;  // parameter -> bucket
  std::vector<size_t> slot_of;    // parameter -> position in its bucket
  std::vector<char> filled;       // parameter's gradient already in its bucket this step
  std::vector<Bucket> buckets;
  size_t next_launch = 0;
  bool armed = false;
  int64_t launches = 0, launches_in_backward = 0;  // for summary()
  std::mutex mu;
};

class GroupCollective final : public Collective {
 public:
  GroupCollective(const LaunchEnv& env, c10::intrusive_ptr<GroupBase> group, std::string backend,
                  const torch::Device& device, const DistributedOptions& o)
      : env_(env), group_(std::move(group)), backend_(std::move(backend)), device_(device),
        timeout_(std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000))),
        bucket_bytes_(static_cast<int64_t>(o.bucket_cap_mb * 1024 * 1024)), buckets_(std::make_shared<Buckets>()) {}

  int rank() const override { return env_.rank; }
  int world_size() const override { return env_.world_size; }
  std::string backend() const override { return backend_; }

  void attach(torch::nn::Module& model) override {
    torch::NoGradGuard no_grad;
    for (auto& t : model.parameters()) broadcast(t);
    for (auto& t : model.buffers()) broadcast(t);
    for (auto& p : model.parameters())
      if (p.requires_grad()) buckets_->params.push_back(p);
    make_buckets();
    std::weak_ptr<Buckets> weak = buckets_;
    for (size_t i = 0; i < buckets_->params.size(); ++i) {
      buckets_->params[i].register_hook([this, weak, i](torch::Tensor grad) {
        if (auto b = weak.lock()) on_gradient(*b, i, grad);
      });
    }
  }

  void prepare_backward(bool overlap) override {
    std::lock_guard<std::mutex> lock(buckets_->mu);
    buckets_->armed = overlap;
  }

  void average_gradients() override {
    Buckets& b = *buckets_;
    std::lock_guard<std::mutex> lock(b.mu);
    b.armed = false;
    torch::NoGradGuard no_grad;
    // What the hooks did not see (no overlap, or a parameter without a gradient this step).
    for (size_t i = 0; i < b.params.size(); ++i) {
      if (b.filled[i]) continue;
      const auto& g = b.params[i].grad();
      auto view = slot(b, i);
      g.defined() ? view.copy_(g) : view.zero_();
      mark_ready(b, i, false);
    }
    const double scale = 1.0 / env_.world_size;
    for (auto& bucket : b.buckets) {
      wait(bucket.work, "all-reduce of the gradients");
      bucket.work.reset();
      bucket.buffer.mul_(scale);
      bucket.ready = 0;
    }
    for (size_t i = 0; i < b.params.size(); ++i) {
      auto& grad = b.params[i].mutable_grad();
      auto view = slot(b, i);
      if (grad.defined()) grad.copy_(view);
      else grad = view.clone();
    }
    std::fill(b.filled.begin(), b.filled.end(), 0);
    b.next_launch = 0;
  }

  void sum(std::vector<double>& values) override {
    if (values.empty()) return;
    auto t = torch::tensor(values, torch::kDouble).to(device_);
    std::vector<at::Tensor> ts{t};
    run("sum of the logged values", [&] { return group_->allreduce(ts); });
    auto back = t.to(torch::kCPU);
    for (size_t i = 0; i < values.size(); ++i) values[i] = back[static_cast<int64_t>(i)].item<double>();
  }

  std::string summary() const override {
    const Buckets& b = *buckets_;
    int64_t bytes = 0;
    for (const auto& bucket : b.buckets) bytes += bucket.buffer.numel() * bucket.buffer.element_size();
    return cat(b.buckets.size(), " gradient bucket(s), ", bytes / 1024, " KiB in all; ", b.launches_in_backward,
               " of ", b.launches, " bucket all-reduces started during backward");
  }

  std::vector<std::string> gather(const std::string& bytes) override {
    std::vector<double> len{static_cast<double>(bytes.size())};
    sum(len);
    if (len[0] != static_cast<double>(bytes.size()) * env_.world_size)
      throw Error(cat("rank ", env_.rank, ": the processes' states differ in size; every rank must run the same "
                      "zoo build on the same kind of device"));
    auto in = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
    std::memcpy(in.data_ptr(), bytes.data(), bytes.size());
    in = in.to(device_);
    std::vector<std::vector<at::Tensor>> out(1);
    for (int r = 0; r < env_.world_size; ++r) out[0].push_back(torch::empty_like(in));
    std::vector<at::Tensor> ins{in};
    run("gather of the random-number states", [&] { return group_->allgather(out, ins); });
    std::vector<std::string> result;
    for (auto& t : out[0]) {
      auto c = t.to(torch::kCPU).contiguous();
      result.emplace_back(static_cast<const char*>(c.data_ptr()), bytes.size());
    }
    return result;
  }

 private:
  void broadcast(torch::Tensor t) {
    auto c = t.contiguous();
    std::vector<at::Tensor> ts{c};
    run("broadcast of rank 0's weights", [&] { return group_->broadcast(ts); });
    if (!c.is_same(t)) t.copy_(c);
  }

  void make_buckets() {
    Buckets& b = *buckets_;
    const size_t n = b.params.size();
    b.bucket_of.assign(n, 0);
    b.slot_of.assign(n, 0);
    b.filled.assign(n, 0);
    int64_t bytes = 0;
    for (size_t k = n; k-- > 0;) {
      const auto& p = b.params[k];
      const bool fresh = b.buckets.empty() || bytes >= bucket_bytes_ ||
                         p.scalar_type() != b.params[b.buckets.back().params.front()].scalar_type();
      if (fresh) b.buckets.emplace_back(), bytes = 0;
      auto& bucket = b.buckets.back();
      b.bucket_of[k] = b.buckets.size() - 1;
      b.slot_of[k] = bucket.params.size();
      bucket.offsets.push_back(bucket.params.empty() ? 0 : bucket.offsets.back() + b.params[bucket.params.back()].numel());
      bucket.params.push_back(k);
      bytes += p.numel() * p.element_size();
    }
    for (auto& bucket : b.buckets) {
      const auto& last = b.params[bucket.params.back()];
      bucket.buffer = torch::zeros({bucket.offsets.back() + last.numel()}, last.options());
    }
  }

  static torch::Tensor slot(Buckets& b, size_t i) {
    auto& bucket = b.buckets[b.bucket_of[i]];
    const auto& p = b.params[i];
    return bucket.buffer.narrow(0, bucket.offsets[b.slot_of[i]], p.numel()).view(p.sizes());
  }

  // A parameter's gradient of the step's last backward pass, before autograd adds it to
  // .grad: what .grad will hold goes into the bucket.
  void on_gradient(Buckets& b, size_t i, const torch::Tensor& incoming) {
    std::lock_guard<std::mutex> lock(b.mu);
    if (!b.armed || b.filled[i]) return;
    torch::NoGradGuard no_grad;
    const auto& g = b.params[i].grad();
    auto view = slot(b, i);
    if (g.defined()) torch::add_out(view, g, incoming);
    else view.copy_(incoming);
    mark_ready(b, i, true);
  }

  void mark_ready(Buckets& b, size_t i, bool in_backward) {
    b.filled[i] = 1;
    ++b.buckets[b.bucket_of[i]].ready;
    while (b.next_launch < b.buckets.size() &&
           b.buckets[b.next_launch].ready == b.buckets[b.next_launch].params.size()) {
      std::vector<at::Tensor> ts{b.buckets[b.next_launch].buffer};
      try {
        b.buckets[b.next_launch].work = group_->allreduce(ts);
      } catch (const std::exception& e) {
        fail("all-reduce of the gradients", e);
      }
      ++b.next_launch;
      ++b.launches;
      b.launches_in_backward += in_backward;
    }
  }

  void wait(const c10::intrusive_ptr<c10d::Work>& work, const char* what) {
    try {
      if (work) work->wait(timeout_);
    } catch (const std::exception& e) {
      fail(what, e);
    }
  }

  [[noreturn]] void fail(const char* what, const std::exception& e) const {
    throw Error(cat("rank ", env_.rank, " of ", env_.world_size, ": ", what, " failed (", first_line(e.what()),
                    "). Another process of this run has probably stopped (see its output) or the network "
                    "timed out (train.ddp_timeout=", timeout_.count() / 1000.0, " s)"));
  }

  // Starts a collective and waits for it; any failure becomes a zoo::Error naming the rank.
  template <class F>
  void run(const char* what, F start) {
    c10::intrusive_ptr<c10d::Work> work;
    try {
      work = start();
    } catch (const std::exception& e) {
      fail(what, e);
    }
    wait(work, what);
  }

 private:
  LaunchEnv env_;
  c10::intrusive_ptr<GroupBase> group_;
  std::string backend_;
  torch::Device device_;
  std::chrono::milliseconds timeout_;
  int64_t bucket_bytes_;
  std::shared_ptr<Buckets> buckets_;
};

// The rendezvous: every process claims its RANK and records its WORLD_SIZE in the store,
// then waits for the others, saying every few seconds which ranks it awaits. A RANK claimed
// twice or a WORLD_SIZE that differs between processes stops every process at once, named.
std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
std::string string_of(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

void fail_world(c10d::Store& store, const std::string& message) {
  try {
    store.set("abort", bytes_of(message));
  } catch (const std::exception&) {  // the store is gone: this process's own error still says it
  }
  throw Error(message);
}

void join_world(c10d::Store& store, const LaunchEnv& env, double timeout_s) {
  const std::string me = cat("rank ", env.rank, " of ", env.world_size);
  if (store.add(cat("claim/", env.rank), 1) > 1)
    fail_world(store, cat(me, ": two processes were started with RANK=", env.rank,
                          "; give each process its own RANK, 0 to WORLD_SIZE-1"));
  const int64_t index = store.add("joined", 1);
  store.set(cat("member/", index), bytes_of(cat(env.rank, " ", env.world_size)));
  const auto start = std::chrono::steady_clock::now();
  auto said = start;
  std::vector<bool> present(static_cast<size_t>(env.world_size), false);
  for (int64_t seen = 0;;) {
    if (store.check({"abort"})) throw Error(cat(me, ": stopped: another process failed to join: ", string_of(store.get("abort"))));
    const int64_t joined = store.add("joined", 0);
    for (; seen < joined && store.check({cat("member/", seen + 1)}); ++seen) {
      int64_t rank = 0, world = 0;
      std::istringstream(string_of(store.get(cat("member/", seen + 1)))) >> rank >> world;
      if (world != env.world_size)
        fail_world(store, cat(me, ": the process of rank ", rank, " was started with WORLD_SIZE=", world,
                              " and this one with WORLD_SIZE=", env.world_size, "; start every process with the same "
                              "WORLD_SIZE (the number of processes)"));
      present[static_cast<size_t>(rank)] = true;
    }
    std::vector<std::string> missing;
    for (int64_t r = 0; r < env.world_size; ++r)
      if (!present[static_cast<size_t>(r)]) missing.push_back(std::to_string(r));
    if (missing.empty()) return;
    const auto now = std::chrono::steady_clock::now();
    const double waited = std::chrono::duration<double>(now - start).count();
    const std::string awaited = cat(seen, " of WORLD_SIZE=", env.world_size, " processes have joined; waiting for rank",
                                    missing.size() > 1 ? "s " : " ", join(missing));
    if (waited > timeout_s)
      throw Error(cat(me, ": ", awaited, " for train.ddp_timeout=", timeout_s, " s; start one process per rank (",
                      "was WORLD_SIZE meant to be ", seen, "?)"));
    if (std::chrono::duration<double>(now - said).count() >= 5) {
      std::cerr << "zoo: " << me << ": " << awaited << " (" << static_cast<int64_t>(waited) << " s of train.ddp_timeout="
                << timeout_s << " s)" << std::endl;
      said = now;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// A second process started with RANK=0 finds MASTER_PORT taken. When the taker is this run's
// rendezvous (rank 0 claimed there), it stops that process too, as a RANK claimed twice does,
// instead of leaving it to wait for the other ranks for the whole train.ddp_timeout.
[[noreturn]] void fail_second_rank_zero(const LaunchEnv& env) {
  const std::string in_use = cat("rank 0 of ", env.world_size, ": MASTER_PORT=", env.master_port, " is in use");
  c10::intrusive_ptr<c10d::Store> store;
  try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<std::uint16_t>(env.master_port);
    so.waitWorkers = false;
    so.timeout = std::chrono::seconds(5);  // not a store, or a silent one: the message below
    store = c10::make_intrusive<c10d::PrefixStore>(cat("zoo/", env.restart, "/"),
                                                   c10::make_intrusive<c10d::TCPStore>(env.master_addr, so));
    if (store->add("claim/0", 0) == 0) store.reset();
  } catch (const std::exception&) {
    store.reset();
  }
  if (store)
    fail_world(*store, cat(in_use, " by the rendezvous of another process started with RANK=0; give each process its "
                           "own RANK, 0 to WORLD_SIZE-1"));
  throw Error(cat(in_use, " on this machine, by a second process started with RANK=0 or by another run; give each "
                  "process its own RANK, or choose a free MASTER_PORT"));
}

#endif  // ZOO_WITH_C10D

}  // namespace

std::unique_ptr<Collective> connect_processes(const LaunchEnv& env, const torch::Device& device,
                                              const DistributedOptions& o) {
  const std::string backend = resolve_backend(o.backend, device, env);
  check_resolves(env);
#if ZOO_WITH_C10D
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000));
  c10::intrusive_ptr<c10d::Store> store;
  try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<std::uint16_t>(env.master_port);
    so.isServer = env.rank == 0 && !env.agent_store;
    so.numWorkers = static_cast<std::size_t>(env.world_size);
    so.waitWorkers = false;  // join_world() waits, and says for whom
    so.timeout = timeout;
    store = c10::make_intrusive<c10d::PrefixStore>(
        cat("zoo/", env.restart, "/"), c10::make_intrusive<c10d::TCPStore>(env.master_addr, so));
  } catch (const std::exception& e) {
    const std::string why = first_line(e.what());
    if (env.rank == 0 && !env.agent_store && why.find("in use") != std::string::npos) fail_second_rank_zero(env);
    throw Error(cat("rank ", env.rank, " of ", env.world_size, ": no rendezvous at MASTER_ADDR:MASTER_PORT=",
                    env.master_addr, ":", env.master_port, " within train.ddp_timeout=", o.timeout_s, " s (",
                    first_line(e.what()), "). Check that rank 0 runs and that every process has the same "
                    "MASTER_ADDR, MASTER_PORT and WORLD_SIZE"));
  }
  try {
    join_world(*store, env, o.timeout_s);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // the store's server (rank 0) went away
    throw Error(cat("rank ", env.rank, " of ", env.world_size, ": lost the rendezvous at MASTER_ADDR:MASTER_PORT=",
                    env.master_addr, ":", env.master_port, " (", first_line(e.what()), "): rank 0 stopped; see its log"));
  }
  c10::intrusive_ptr<GroupBase> group;
  try {
    if (backend == "gloo") {
#if ZOO_WITH_GLOO
      auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
      const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
      const bool loopback = env.master_addr == "localhost" || env.master_addr.rfind("127.", 0) == 0;
      opts->devices.push_back(ifname && *ifname ? c10d::ProcessGroupGloo::createDeviceForInterface(ifname)
                              : loopback        ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                                : c10d::ProcessGroupGloo::createDefaultDevice());
      opts->threads = 2;
      group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, opts);
#endif
    } else {
#if ZOO_WITH_NCCL
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      opts->timeout = timeout;
      group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.world_size, opts);
#endif
    }
  } catch (const std::exception& e) {
    throw Error(cat("rank ", env.rank, " of ", env.world_size, ": cannot start the ", backend, " process group (",
                    first_line(e.what()), ")"));
  }
  return std::make_unique<GroupCollective>(env, group, backend, device, o);
#else
  (void)device;
  throw Error("unreachable: no c10d backend");
#endif
}

}  // namespace zoo
