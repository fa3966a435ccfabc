#include "train/trainer.h"

#include <csignal>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <thread>
#include <type_traits>

#include <torch/version.h>
#include <ATen/autocast_mode.h>

#include <ATen/Parallel.h>

#include "core/threads.h"
#include "train/checkpoint.h"
#include "train/device.h"
#include "train/logging.h"

namespace fs = std::filesystem;

namespace zoo {

// ---------------------------------------------------------------------------------
// Schedules

double lr_factor(const std::string& schedule, int64_t step, int64_t warmup, int64_t total) {
  const double s = static_cast<double>(step), w = static_cast<double>(warmup);
  if (schedule == "constant") return 1.0;
  if (warmup > 0 && step < warmup && schedule != "inverse_sqrt") return s / w;
  if (schedule == "constant_with_warmup") return 1.0;
  const double span = std::max<double>(1.0, static_cast<double>(total - warmup));
  const double progress = std::min(1.0, std::max(0.0, (s - w) / span));
  if (schedule == "linear") return 1.0 - progress;
  if (schedule == "cosine") return 0.5 * (1.0 + std::cos(M_PI * progress));
  if (schedule == "inverse_sqrt") {
    // Noam (Vaswani et al. 2017): linear warmup to the peak at step `warmup`, then
    // decay with 1/sqrt(step); learning_rate is the peak.
    const double n = s + 1, ww = std::max(1.0, w);
    return std::min(n / ww, std::sqrt(ww / n));
  }
  throw Error(cat("unknown lr_scheduler_type '", schedule, "'"));
}

// ---------------------------------------------------------------------------------
// Signals

std::atomic<bool>& stop_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}

namespace {
void on_stop_signal(int sig) {
  if (stop_requested().exchange(true)) {
    // Second signal: the user insists. Checkpoints are atomic, so leaving now is safe.
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}
}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// ---------------------------------------------------------------------------------
// Default epoch plan: a seeded permutation cut into batches.

std::vector<std::vector<int64_t>> Task::epoch_plan(uint64_t seed, int64_t epoch, int64_t batch_size) const {
  const int64_t n = num_train_examples();
  auto gen = at::detail::createCPUGenerator(seed * 1000003ULL + static_cast<uint64_t>(epoch));
  auto perm = torch::randperm(n, gen, torch::kLong);
  const int64_t* p = perm.data_ptr<int64_t>();
  std::vector<std::vector<int64_t>> plan;
  for (int64_t i = 0; i < n; i += batch_size) plan.emplace_back(p + i, p + std::min(n, i + batch_size));
  return plan;
}

namespace {

uint64_t mix(uint64_t a, uint64_t b) {  // splitmix64 of a combination: per-batch seeds
  uint64_t z = a * 0x9E3779B97F4A7C15ULL + b + 0x632BE59BD9B4E019ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Background loader: builds batches in order from (epoch, index) on its own thread so that
// the model never waits on I/O or augmentation. Positions make resume exact.
class BatchStream {
 public:
  struct Item {
    Batch batch;
    int64_t epoch, index;  // position of this batch
  };

  BatchStream(const Task& task, uint64_t seed, int64_t batch_size, int64_t epoch, int64_t index, int64_t prefetch)
      : task_(task), seed_(seed), batch_size_(batch_size), prefetch_(prefetch) {
    worker_ = std::thread([this, epoch, index] { run(epoch, index); });
  }
  ~BatchStream() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  Item next() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !queue_.empty() || error_; });
    if (error_) std::rethrow_exception(error_);
    Item item = std::move(queue_.front());
    queue_.pop_front();
    cv_.notify_all();
    return item;
  }

 private:
  void run(int64_t epoch, int64_t index) {
    try {
      while (true) {
        auto plan = task_.epoch_plan(seed_, epoch, batch_size_);
        if (plan.empty()) throw Error("the training set is empty");
        for (; index < static_cast<int64_t>(plan.size()); ++index) {
          Item item{task_.make_train_batch(plan[index], mix(mix(seed_, epoch), index)), epoch, index};
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [this] { return done_ || static_cast<int64_t>(queue_.size()) < prefetch_; });
          if (done_) return;
          queue_.push_back(std::move(item));
          cv_.notify_all();
        }
        ++epoch;
        index = 0;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = std::current_exception();
      cv_.notify_all();
    }
  }

  const Task& task_;
  uint64_t seed_;
  int64_t batch_size_, prefetch_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool done_ = false;
  std::exception_ptr error_;
  std::thread worker_;
};

std::unique_ptr<torch::optim::Optimizer> make_optimizer(torch::nn::Module& model, const TrainOptions& o) {
  // No weight decay on biases and normalisation weights (1-D tensors), as Hugging Face and
  // nanoGPT do.
  std::vector<torch::Tensor> decay, no_decay;
  for (auto& p : model.parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  auto add = [&](std::vector<torch::Tensor>& params, auto options) {
    if (!params.empty())
      groups.emplace_back(params, std::make_unique<decltype(options)>(options));
  };
  if (o.optim == "adamw" || o.optim == "adam") {
    auto base = torch::optim::AdamWOptions(o.learning_rate)
                    .betas({o.adam_beta1, o.adam_beta2})
                    .eps(o.adam_epsilon);
    if (o.optim == "adamw") {
      add(decay, torch::optim::AdamWOptions(base).weight_decay(o.weight_decay));
      add(no_decay, torch::optim::AdamWOptions(base).weight_decay(0.0));
      return std::make_unique<ThreadedAdamW>(groups, base);
    }
    auto adam = torch::optim::AdamOptions(o.learning_rate).betas({o.adam_beta1, o.adam_beta2}).eps(o.adam_epsilon);
    add(decay, torch::optim::AdamOptions(adam).weight_decay(o.weight_decay));
    add(no_decay, torch::optim::AdamOptions(adam).weight_decay(0.0));
    return std::make_unique<torch::optim::Adam>(groups, adam);
  }
  auto sgd = torch::optim::SGDOptions(o.learning_rate).momentum(o.momentum);
  add(decay, torch::optim::SGDOptions(sgd).weight_decay(o.weight_decay));
  add(no_decay, torch::optim::SGDOptions(sgd).weight_decay(0.0));
  return std::make_unique<torch::optim::SGD>(groups, sgd);
}

std::string tensor_bytes(const torch::Tensor& t) {
  auto c = t.contiguous().to(torch::kCPU);
  return std::string(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
}

torch::Tensor bytes_tensor(const std::string& s) {
  auto t = torch::empty({static_cast<int64_t>(s.size())}, torch::kUInt8);
  std::memcpy(t.data_ptr(), s.data(), s.size());
  return t;
}

json rng_state(const torch::Device& device) {
  json j;
  j["cpu"] = base64_encode(tensor_bytes(at::detail::getDefaultCPUGenerator().get_state()));
  if (device.is_cuda()) {
    auto gen = at::globalContext().defaultGenerator(device);
    j["cuda"] = base64_encode(tensor_bytes(gen.get_state()));
  }
  return j;
}

void restore_rng_state(const json& j, const torch::Device& device) {
  auto set = [](at::Generator gen, const std::string& b64) {  // copies share the generator
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(bytes_tensor(base64_decode(b64)));
  };
  if (j.contains("cpu")) set(at::detail::getDefaultCPUGenerator(), j["cpu"]);
  if (device.is_cuda() && j.contains("cuda")) set(at::globalContext().defaultGenerator(device), j["cuda"]);
}

bool improved(double value, double best, bool greater) { return greater ? value > best : value < best; }

}  // namespace

namespace {
// The key under which LibTorch's optimizers keep a parameter's state: its TensorImpl's
// address, printed (LibTorch 1.x) or as a pointer (newer LibTorch).
template <class Key>
Key optimizer_state_key(const torch::Tensor& p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream os;
    os << p.unsafeGetTensorImpl();
    return os.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}
}  // namespace

namespace {
// Why bf16 autocast cannot run on `device`, or "" when it can.
std::string bf16_problem(const torch::Device& device) {
  if (device.is_cpu()) {
    if (!cpu_bf16_support().empty()) return "";
    return "train.precision=bf16 on the CPU needs native bfloat16 arithmetic (AVX512-BF16 or AMX, e.g. Intel Xeon 4th "
           "generation or AMD Zen 4) and a LibTorch with oneDNN; this machine has neither (see zoo devices): use "
           "train.precision=fp32";
  }
#if TORCH_VERSION_MAJOR >= 2
  if (device.is_cuda()) {
    if (cuda_bf16_support(device.has_index() ? device.index() : 0)) return "";
    return cat("train.precision=bf16 on ", device.str(), " needs a GPU of compute capability 8.0 or later "
               "(Ampere and newer; see zoo devices): use train.precision=fp32");
  }
  return cat("train.precision=bf16 needs a CUDA device or a CPU with native bf16 (got ", device.str(),
             "); use train.precision=fp32");
#else
  return cat("train.precision=bf16 on ", device.str(), " needs LibTorch >= 2.0 (this is LibTorch ", TORCH_VERSION,
             "); use train.precision=fp32");
#endif
}
}  // namespace

void check_precision(const std::string& precision, const torch::Device& device) {
  if (precision == "fp32") return;
  const std::string problem = bf16_problem(device);
  if (!problem.empty()) throw Error(problem);
}

std::string resolve_precision(const std::string& precision, const torch::Device& device) {
  if (precision == "auto") return bf16_problem(device).empty() ? "bf16" : "fp32";
  check_precision(precision, device);
  return precision;
}

WeightAverage::WeightAverage(torch::nn::Module& model, double decay) : decay_(decay) {
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : state_dict(model)) {
    live_.push_back(t);
    avg_.push_back(t.detach().clone());
  }
}

double WeightAverage::decay_at(double decay, int64_t step) {
  return std::min(decay, (1.0 + static_cast<double>(step)) / (10.0 + static_cast<double>(step)));
}

void WeightAverage::update(int64_t step) {
  torch::NoGradGuard no_grad;
  const double d = decay_at(decay_, step);
  for (size_t i = 0; i < avg_.size(); ++i) {
    if (avg_[i].is_floating_point()) avg_[i].lerp_(live_[i], 1.0 - d);  // d * avg + (1 - d) * live
    else avg_[i].copy_(live_[i]);
  }
}

void WeightAverage::swap() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < avg_.size(); ++i) {
    auto held = live_[i].clone();
    live_[i].copy_(avg_[i]);
    avg_[i].copy_(held);
  }
}

AutocastGuard::AutocastGuard(bool enabled, const torch::Device& device) : enabled_(enabled), cpu_(device.is_cpu()) {
  if (enabled_) set(true);
}

AutocastGuard::~AutocastGuard() {
  if (!enabled_) return;
  set(false);
  at::autocast::clear_cache();
}

void AutocastGuard::set(bool on) const {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  const auto type = cpu_ ? at::kCPU : at::kCUDA;
  at::autocast::set_autocast_enabled(type, on);
  if (on) at::autocast::set_autocast_dtype(type, at::kBFloat16);
#else
  if (cpu_) {
    at::autocast::set_cpu_enabled(on);
    if (on) at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  } else {
    at::autocast::set_enabled(on);
    if (on) at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
  }
#endif
}

torch::Tensor ThreadedAdamW::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    torch::AutoGradMode enable_grad(true);
    loss = closure();
  }
  struct Work {
    torch::Tensor param;
    torch::optim::AdamWParamState* state;
    const torch::optim::AdamWOptions* options;
  };
  std::vector<Work> work;
  int64_t total = 0;
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(!p.grad().is_sparse(), "AdamW does not support sparse gradients");
      auto& slot = state_[optimizer_state_key<std::decay_t<decltype(state_)>::key_type>(p)];
      if (!slot) {  // created here, before the threads start, exactly as AdamW::step does
        auto state = std::make_unique<torch::optim::AdamWParamState>();
        state->step(0);
        state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        if (options.amsgrad()) state->max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(state);
      }
      work.push_back({p, static_cast<torch::optim::AdamWParamState*>(slot.get()), &options});
      total += p.numel();
    }
  }
  auto update = [](const Work& w) {
    auto& p = const_cast<torch::Tensor&>(w.param);
    const auto& grad = p.grad();
    const auto& o = *w.options;
    auto& s = *w.state;
    if (o.weight_decay() != 0) p.mul_(1 - o.lr() * o.weight_decay());
    s.step(s.step() + 1);
    const auto [beta1, beta2] = o.betas();
    const double bias_correction1 = 1 - std::pow(beta1, s.step());
    const double bias_correction2 = 1 - std::pow(beta2, s.step());
    s.exp_avg().mul_(beta1).add_(grad, 1 - beta1);
    s.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);
    torch::Tensor denom;
    if (o.amsgrad()) {
      torch::max_out(s.max_exp_avg_sq(), s.exp_avg_sq(), s.max_exp_avg_sq());
      denom = (s.max_exp_avg_sq().sqrt() / std::sqrt(bias_correction2)).add_(o.eps());
    } else {
      denom = (s.exp_avg_sq().sqrt() / std::sqrt(bias_correction2)).add_(o.eps());
    }
    p.addcdiv_(s.exp_avg(), denom, -o.lr() / bias_correction1);
  };
  if (work.empty()) return loss;
  const int64_t threads = at::get_num_threads();
  if (threads <= 1 || !work.front().param.device().is_cpu() || at::in_parallel_region()) {
    for (const auto& w : work) update(w);
    return loss;
  }
  // Cut the list where the running size passes each thread's share; each thread's
  // operations then run single-threaded (nested parallelism is serial in ATen).
  std::vector<size_t> cut{0};
  int64_t running = 0;
  for (size_t i = 0; i < work.size(); ++i) {
    running += work[i].param.numel();
    if (running * threads >= total * static_cast<int64_t>(cut.size()) && cut.size() < static_cast<size_t>(threads))
      cut.push_back(i + 1);
  }
  cut.push_back(work.size());
  at::parallel_for(0, static_cast<int64_t>(cut.size()) - 1, 1, [&](int64_t begin, int64_t end) {
    torch::NoGradGuard no_grad_here;  // grad mode is per thread
    for (int64_t t = begin; t < end; ++t)
      for (size_t i = cut[t]; i < cut[t + 1]; ++i) update(work[i]);
  });
  return loss;
}

double forward_backward(const std::function<torch::Tensor(const Batch&)>& loss_of, const Batch& batch,
                        double weight, int64_t shards, const std::vector<torch::Tensor>& params,
                        const std::function<void(double)>& check, bool onednn) {
  if (shards <= 1 || batch.size < 2 * shards) {
    auto loss = loss_of(batch);
    const double value = loss.item<double>();
    if (check) check(value);
    (loss * weight).backward();
    return value;
  }
  const int64_t base = batch.size / shards, extra = batch.size % shards;
  std::vector<Batch> parts;
  for (int64_t i = 0, start = 0; i < shards; ++i) {
    const int64_t n = base + (i < extra ? 1 : 0);
    parts.push_back(batch.narrow(start, n));
    start += n;
  }
  std::vector<double> values(parts.size());
  std::vector<torch::autograd::variable_list> grads(parts.size());
  const bool grad_mode = torch::GradMode::is_enabled();
  {
    ScopedSingleThreadedBlas blas;
    // oneDNN's convolutions wait for a full team of OpenMP threads and hang when called from
    // inside a parallel region: use LibTorch's own kernels meanwhile, unless the caller needs
    // oneDNN's bf16 matrix products (they run single-threaded there, as they should).
    const bool mkldnn = at::globalContext().userEnabledMkldnn();
    if (!onednn) at::globalContext().setUserEnabledMkldnn(false);
    struct Restore {
      bool on;
      ~Restore() { at::globalContext().setUserEnabledMkldnn(on); }
    } restore{mkldnn};
    at::parallel_for(0, shards, /*grain_size=*/1, [&](int64_t begin, int64_t end) {
      torch::AutoGradMode enable(grad_mode);
      for (int64_t i = begin; i < end; ++i) {
        const double share = static_cast<double>(parts[i].size) / static_cast<double>(batch.size);
        auto loss = loss_of(parts[i]);
        values[i] = loss.item<double>() * share;
        grads[i] = torch::autograd::grad({loss * (weight * share)}, params, {}, /*retain_graph=*/false,
                                         /*create_graph=*/false, /*allow_unused=*/true);
      }
    });
  }
  double value = 0;
  for (double v : values) value += v;
  if (check) check(value);
  torch::NoGradGuard no_grad;
  for (size_t p = 0; p < params.size(); ++p) {
    torch::Tensor sum;
    for (const auto& g : grads) {
      if (!g[p].defined()) continue;
      sum = sum.defined() ? sum.add_(g[p]) : g[p].clone();  // own memory: grads may be views
    }
    if (!sum.defined()) continue;
    auto& grad = const_cast<torch::Tensor&>(params[p]).mutable_grad();
    grad = grad.defined() ? grad.add_(sum) : sum;
  }
  return value;
}

namespace {

// With train.ema_decay a checkpoint's model.safetensors holds the average (what evaluation,
// keep-best and deployment use) and this file the weights being trained (for resume).
constexpr const char* kTrainingWeights = "training_weights.safetensors";

// The model holds the averages while alive (no-op without an average).
struct AveragedWeights {
  explicit AveragedWeights(WeightAverage* average) : average_(average) {
    if (average_) average_->swap();
  }
  ~AveragedWeights() {
    if (average_) average_->swap();
  }
  AveragedWeights(const AveragedWeights&) = delete;
  AveragedWeights& operator=(const AveragedWeights&) = delete;

 private:
  WeightAverage* average_;
};

}  // namespace

TrainResult train(Task& task, const TrainerArgs& args) {
  const TrainOptions o = read_options<TrainOptions>(args.config.at("train"), "train");
  const std::string precision = resolve_precision(o.precision, args.device);
  const torch::Device device = args.device;
  std::error_code ec;
  fs::create_directories(args.output_dir, ec);
  if (ec) throw Error(cat(args.output_dir, ": cannot create output directory: ", ec.message()));
  task.prepare_training(args.output_dir);
  // The task's resolved config (it may add what it learnt from the data, e.g. vocabulary
  // sizes) is the one that rebuilds the model from a checkpoint.
  const json& config = task.config().is_null() ? args.config : task.config();
  write_json_file((fs::path(args.output_dir) / "config.json").string(), config);

  auto model = task.model();
  model->to(device);
  auto optimizer = make_optimizer(*model, o);

  const int64_t micro_batches = static_cast<int64_t>(task.epoch_plan(o.seed, 0, o.per_device_train_batch_size).size());
  const int64_t steps_per_epoch = std::max<int64_t>(1, micro_batches / o.gradient_accumulation_steps);
  const int64_t total_steps = o.max_steps > 0
                                  ? o.max_steps
                                  : static_cast<int64_t>(std::ceil(o.num_train_epochs * steps_per_epoch));
  const int64_t warmup = o.warmup_steps > 0 ? o.warmup_steps
                                            : static_cast<int64_t>(std::ceil(o.warmup_ratio * total_steps));
  const std::string best_metric = o.metric_for_best_model.empty() ? task.default_best_metric() : o.metric_for_best_model;
  const bool greater = o.metric_for_best_model.empty() ? best_metric != "loss" : o.greater_is_better;

  // --- state (restored on resume) ---
  int64_t step = 0, epoch = 0, index = 0, evals_without_improvement = 0;
  double best_value = greater ? -INFINITY : INFINITY;
  std::string best_checkpoint;
  double examples_seen = 0;
  std::optional<WeightAverage> average;

  if (!args.resume_from.empty()) {
    const fs::path dir = args.resume_from;
    const json st = read_json_file((dir / "trainer_state.json").string());
    load_model(*model, (dir / "model.safetensors").string());
    // The checkpoint has an average exactly when it has the weights being trained beside it.
    const std::string live = (dir / kTrainingWeights).string();
    const bool averaged = fs::exists(live);
    if (o.ema_decay > 0 && !averaged)
      throw Error(cat(args.resume_from, " was trained without train.ema_decay, so it has no weight average to "
                      "continue: resume with --set train.ema_decay=0, or start a new run"));
    if (o.ema_decay <= 0 && averaged) {
      const double saved = read_json_file((dir / "config.json").string())
                               .value("train", json::object())
                               .value("ema_decay", 0.0);
      throw Error(cat(args.resume_from, " was trained with train.ema_decay=", saved,
                      " (its model.safetensors is the average, ", live, " the weights being trained): resume with "
                      "--set train.ema_decay=", saved));
    }
    if (averaged) {
      average.emplace(*model, o.ema_decay);  // from model.safetensors
      load_model(*model, live);
    }
    try {
      torch::load(*optimizer, (dir / "optimizer.pt").string());
    } catch (const c10::Error& e) {
      throw Error(cat((dir / "optimizer.pt").string(), ": cannot load optimizer state (",
                      std::string(e.what_without_backtrace()).substr(0, 200), ")"));
    }
    step = st.at("global_step");
    epoch = st.at("epoch_index");
    index = st.at("batch_in_epoch");
    examples_seen = st.value("examples_seen", 0.0);
    if (st.contains("best_metric") && st["best_metric"].is_number()) best_value = st["best_metric"];
    best_checkpoint = st.value("best_model_checkpoint", "");
    evals_without_improvement = st.value("evals_without_improvement", 0);
    restore_rng_state(st.at("rng_state"), device);
    if (step >= total_steps)
      throw Error(cat(args.resume_from, " is at step ", step, ", the run's last step is ", total_steps,
                      "; raise train.max_steps (--set train.max_steps=N) to train further"));
  }

  if (o.ema_decay > 0 && !average) average.emplace(*model, o.ema_decay);
  WeightAverage* const avg = average ? &*average : nullptr;

  TrainLogger log(args.output_dir, total_steps, o.report_to_tensorboard);
  log.message(cat("training ", total_steps, " steps (", steps_per_epoch, " per epoch, batch ",
                  o.per_device_train_batch_size, "x", o.gradient_accumulation_steps, ") on ", device.str(), ", ",
                  precision, o.precision == "auto" ? " (train.precision=auto)" : "",
                  args.resume_from.empty() ? std::string() : cat(", resuming from ", args.resume_from, " at step ", step)));

  TrainResult result;
  auto save = [&](const Metrics* eval_metrics) {
    CheckpointWriter w(args.output_dir, step);
    write_json_file(w.path("config.json"), config);
    if (avg) save_model(*model, w.path(kTrainingWeights), config);
    {
      AveragedWeights averaged(avg);
      save_model(*model, w.path("model.safetensors"), config);
    }
    torch::save(*optimizer, w.path("optimizer.pt"));
    task.save_assets(w.tmp_dir());
    json st = {{"global_step", step},
               {"epoch", static_cast<double>(epoch) + static_cast<double>(index) / std::max<int64_t>(1, micro_batches)},
               {"epoch_index", epoch},
               {"batch_in_epoch", index},
               {"max_steps", total_steps},
               {"examples_seen", examples_seen},
               {"metric_for_best_model", best_metric},
               {"best_metric", std::isfinite(best_value) ? json(best_value) : json(nullptr)},
               {"best_model_checkpoint", best_checkpoint},
               {"evals_without_improvement", evals_without_improvement},
               {"seed", o.seed},
               {"rng_state", rng_state(device)}};
    if (eval_metrics) st["eval_metrics"] = *eval_metrics;
    write_json_file(w.path("trainer_state.json"), st);
    const std::string final_dir = w.commit();
    result.last_checkpoint = final_dir;
    return final_dir;
  };

  auto evaluate = [&]() {
    Metrics m;
    {
      AveragedWeights averaged(avg);
      m = task.evaluate("valid", o.per_device_eval_batch_size, device);
    }
    model->train();
    json j(m);
    log.log_eval(step, "valid", j);
    result.final_metrics = m;
    auto it = m.find(best_metric);
    if (it == m.end()) {
      std::vector<std::string> names;
      for (auto& kv : m) names.push_back(kv.first);
      throw Error(cat("config: train.metric_for_best_model '", best_metric, "' is not reported by this task; it reports: ",
                      join(names)));
    }
    const bool better = improved(it->second, best_value, greater);
    if (better) best_value = it->second, evals_without_improvement = 0;
    else ++evals_without_improvement;
    return std::make_pair(m, better);
  };

  auto after_save_rotate = [&]() { rotate_checkpoints(args.output_dir, o.save_total_limit, best_checkpoint); };

  BatchStream stream(task, static_cast<uint64_t>(o.seed), o.per_device_train_batch_size, epoch, index,
                     o.dataloader_prefetch);
  model->train();
  const auto t_start = std::chrono::steady_clock::now();
  auto t_window = t_start;
  double window_loss = 0, window_examples = 0;
  int64_t window_steps = 0;
  const bool autocast = precision == "bf16";
  // One batch slice per core on the CPU (see forward_backward).
  const int64_t shards = device.is_cpu() && task.splittable() ? at::get_num_threads() : 1;
  const auto params = model->parameters();

  while (step < total_steps) {
    optimizer->zero_grad();
    double step_loss = 0;
    int64_t step_examples = 0;
    for (int64_t micro = 0; micro < o.gradient_accumulation_steps; ++micro) {
      auto item = stream.next();
      Batch batch = item.batch.to(device);
      const double value = forward_backward(
          [&](const Batch& b) {
            AutocastGuard ac(autocast, device);  // the forward pass only, as PyTorch recommends
            return task.loss(b);
          },
          batch, 1.0 / static_cast<double>(o.gradient_accumulation_steps), shards, params, [&](double v) {
            if (std::isfinite(v)) return;
            throw Error(cat("loss is ", v, " at step ", step + 1, " (micro-batch ", micro + 1, "); stopping. ",
                            result.last_checkpoint.empty() && latest_checkpoint(args.output_dir).empty()
                                ? std::string("No checkpoint was written yet.")
                                : cat("The last good checkpoint is ", latest_checkpoint(args.output_dir), "."),
                            " Try a lower train.learning_rate or train.max_grad_norm."));
          },
          /*onednn=*/autocast);
      step_loss += value / o.gradient_accumulation_steps;
      step_examples += batch.size;
      // Position of the next batch to consume: what a checkpoint must record.
      epoch = item.epoch;
      index = item.index + 1;
    }
    double grad_norm = NAN;
    if (o.max_grad_norm > 0) grad_norm = torch::nn::utils::clip_grad_norm_(model->parameters(), o.max_grad_norm);
    const double lr = o.learning_rate * lr_factor(o.lr_scheduler_type, step, warmup, total_steps);
    for (auto& group : optimizer->param_groups()) group.options().set_lr(lr);
    optimizer->step();
    ++step;
    if (avg) avg->update(step);
    examples_seen += step_examples;
    window_loss += step_loss;
    window_examples += step_examples;
    ++window_steps;

    const auto now = std::chrono::steady_clock::now();
    const double window_s = std::chrono::duration<double>(now - t_window).count();
    log.progress(step, step_loss, lr, window_s > 0 ? window_steps / window_s : 0);
    if (step % o.logging_steps == 0 || step == total_steps) {
      json values = {{"loss", window_loss / window_steps},
                     {"lr", lr},
                     {"epoch", static_cast<double>(epoch) + static_cast<double>(index) / std::max<int64_t>(1, micro_batches)},
                     {"examples_per_second", window_examples / std::max(window_s, 1e-9)},
                     {"elapsed_seconds", std::chrono::duration<double>(now - t_start).count()}};
      if (std::isfinite(grad_norm)) values["grad_norm"] = grad_norm;
      log.log_train(step, values);
      window_loss = window_examples = 0;
      window_steps = 0;
      t_window = std::chrono::steady_clock::now();
    }

    const bool last = step == total_steps;
    const bool interrupted = stop_requested().load();
    bool do_eval = last || (o.eval_steps > 0 && step % o.eval_steps == 0);
    bool do_save = last || interrupted || (o.save_steps > 0 && step % o.save_steps == 0);
    bool stop_early = false;
    if (do_eval && !interrupted) {
      auto [metrics, better] = evaluate();
      if (better) do_save = true;  // keep-best needs the weights on disk
      if (o.early_stopping_patience > 0 && evals_without_improvement >= o.early_stopping_patience) {
        stop_early = do_save = true;
      }
      if (do_save) {
        const std::string dir_name = (fs::path(args.output_dir) / checkpoint_dir_name(step)).string();
        if (better) best_checkpoint = dir_name;
        save(&metrics);
        after_save_rotate();
      }
    } else if (do_save) {
      save(nullptr);
      after_save_rotate();
    }
    if (interrupted) {
      log.message(cat("interrupted at step ", step, "; checkpoint saved to ", result.last_checkpoint,
                      ". Resume with: zoo train --config ", args.config_source.empty() ? "CONFIG" : args.config_source,
                      " --output-dir ", args.output_dir, " --resume"));
      result.interrupted = true;
      break;
    }
    if (stop_early) {
      log.message(cat("early stopping at step ", step, ": no improvement of ", best_metric, " in ",
                      o.early_stopping_patience, " evaluations"));
      result.early_stopped = true;
      break;
    }
  }
  log.flush();
  result.global_step = step;
  result.best_checkpoint = best_checkpoint;
  if (!result.interrupted) {
    log.message(cat("done: ", step, " steps in ",
                    format_duration(std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count()),
                    "; last checkpoint ", result.last_checkpoint,
                    best_checkpoint.empty() ? std::string() : cat("; best (", best_metric, "=", best_value, ") ", best_checkpoint)));
  }
  return result;
}

}  // namespace zoo
