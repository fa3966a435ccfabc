// zoo::Generator: text generation with a GPT (predict/text_generator.h), one prompt streamed or
// many in left-padded batches, each prompt's text streamed through TextStream.
#include "zoo/zoo.h"

#include <algorithm>
#include <iostream>
#include <limits>
#include <numeric>

#include "api/generator_impl.h"
#include "api/labels.h"
#include "data/text.h"
#include "models/quantize.h"
#include "predict/text_stream.h"

namespace zoo {

namespace api {

void check_options(const GenerationOptions& o) {
  api::check_range<int64_t>("max_new_tokens", o.max_new_tokens, 0, 1000000);
  api::check_range<int64_t>("beam_size", o.beam_size, 1, 64);
  api::check_range<int64_t>("top_k", o.top_k, 0, std::numeric_limits<int32_t>::max());
  api::check_range("top_p", o.top_p, 1e-9, 1.0);
  api::check_range("temperature", o.temperature, 1e-6, 100.0);
  api::check_range("repetition_penalty", o.repetition_penalty, 1e-6, 100.0);
  api::check_range<int64_t>("min_tokens_to_keep", o.min_tokens_to_keep, 1, std::numeric_limits<int32_t>::max());
  api::check_range<int64_t>("batch_size", o.batch_size, 1, 4096);
}

models::SamplingOptions sampling_of(const GenerationOptions& o) {
  models::SamplingOptions s;
  s.do_sample = o.beam_size == 1 && !o.greedy;
  s.temperature = o.temperature;
  s.top_k = o.top_k;
  s.top_p = o.top_p;
  s.repetition_penalty = o.repetition_penalty;
  s.min_tokens_to_keep = o.min_tokens_to_keep;
  s.seed = static_cast<uint64_t>(o.seed);
  s.validate();
  return s;
}

}  // namespace api

std::vector<int64_t> Generator::Impl::prompt_ids(const std::string& text, size_t index, std::string* warning) const {
  std::vector<int64_t> ids = model->encode(text);
  if (ids.empty()) throw Error(cat("prompt ", index, " encodes to no token; give it some text"));
  const auto context = static_cast<size_t>(model->context_size());
  if (ids.size() > context) {
    const std::string message = cat("prompt ", index, " has ", ids.size(), " tokens but the model's context is ",
                                    context, "; keeping its last ", context, " tokens");
    if (warning) *warning = message;
    else std::cerr << "zoo: warning: " << message << std::endl;
    ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(context));
  }
  return ids;
}

models::GenerationOptions Generator::Impl::search_options(const GenerationOptions& o, int64_t first) const {
  models::GenerationOptions g;
  g.eos_id = model->eos_id() >= 0 ? model->eos_id() : std::numeric_limits<int64_t>::max();
  g.max_new_tokens = o.max_new_tokens;
  g.num_beams = o.beam_size;
  g.bos_id = first;
  return g;
}

void Generator::Impl::decode(const std::vector<std::vector<int64_t>>& ids, const std::vector<size_t>& which,
                           const GenerationOptions& o, const GenerationCallback& on_text,
                           std::vector<Generation>& out) const {
  std::vector<std::vector<int64_t>> prompts;
  std::vector<bool> cancelled(which.size(), false);  // its callback returned false: the prompt stops
  std::vector<TextStream> streams;
  streams.reserve(which.size());
  for (size_t r = 0; r < which.size(); ++r) {
    const size_t index = which[r];
    prompts.push_back(ids[index]);
    streams.emplace_back(*model, o.stop, [&on_text, &cancelled, r, index](const std::string& piece) {
      if (on_text && !cancelled[r] && !on_text(index, piece)) cancelled[r] = true;
    });
  }
  auto decoding = which.size() == 1 ? model->start_decoding(prompts[0], o.use_cache)
                                    : model->start_decoding(prompts, o.use_cache);
  const models::GenerationOptions g = search_options(o, decoding.first);
  std::vector<models::Hypothesis> found;
  if (o.beam_size > 1) {
    models::RepetitionPenalty penalty(o.repetition_penalty, prompts[0]);
    for (auto& best : models::beam_search(*decoding.model, std::move(decoding.state), g,
                                          which.size() == 1 && o.repetition_penalty != 1.0 ? &penalty : nullptr))
      found.push_back(best.at(0));
    for (size_t r = 0; r < which.size(); ++r)
      for (int64_t token : found[r].tokens)
        if (!streams[r].add(token) || cancelled[r]) break;
  } else {
    found = models::sample_decode(*decoding.model, std::move(decoding.state), g, api::sampling_of(o),
                                  which.size() == 1 ? prompts[0] : std::vector<int64_t>{}, nullptr,
                                  [&](int64_t row, int64_t token) {
                                    return streams[static_cast<size_t>(row)].add(token) &&
                                           !cancelled[static_cast<size_t>(row)];
                                  });
  }
  for (size_t r = 0; r < which.size(); ++r) {
    if (!cancelled[r]) streams[r].finish();
    Generation& gen = out[which[r]];
    gen.text = streams[r].text();
    gen.tokens = streams[r].tokens();
    gen.logprob = found[r].log_prob;
    gen.prompt_tokens = static_cast<int64_t>(ids[which[r]].size());
    gen.finish_reason = streams[r].stopped() || cancelled[r] || found[r].finished ? "stop" : "length";
  }
}

Generator::Generator(const std::string& dir, torch::Device device, const LoadOptions& load)
    : impl_(std::make_unique<Impl>()) {
  models::check_quantize(load.quantize, device, "LoadOptions::quantize");
  impl_->model = load_text_generator(dir, device, load.quantize);
  impl_->device = device;
}
Generator::~Generator() = default;
Generator::Generator(Generator&&) noexcept = default;
Generator& Generator::operator=(Generator&&) noexcept = default;

int64_t Generator::context_size() const { return impl_->model->context_size(); }
int64_t Generator::count_tokens(const std::string& text) const {
  return static_cast<int64_t>(impl_->model->encode(text).size());
}

std::vector<Generation> Generator::generate(const std::vector<std::string>& prompts,
                                            const GenerationOptions& options) const {
  return generate(prompts, options, {});
}

std::vector<Generation> Generator::generate(const std::vector<std::string>& prompts, const GenerationOptions& options,
                                            const GenerationCallback& on_text) const {
  api::check_options(options);
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (prompts[i].empty()) throw Error(cat("prompt ", i, " is empty; give it some text"));
    data::check_utf8(prompts[i], cat("prompt ", i));
  }
  torch::NoGradGuard no_grad;
  std::vector<std::vector<int64_t>> ids;
  for (size_t i = 0; i < prompts.size(); ++i) ids.push_back(impl_->prompt_ids(prompts[i], i));
  std::vector<Generation> out(prompts.size());
  // The repetition penalty reads each prompt's own text: one prompt at a time then. So too when a
  // row may fill the context: the decoder then goes on from half the batch's window, whose width
  // the batch's longest row sets, and a row would not continue as it does alone.
  size_t longest = 0;
  for (const auto& p : ids) longest = std::max(longest, p.size());
  const bool fills = static_cast<int64_t>(longest) + options.max_new_tokens > impl_->model->context_size();
  const size_t batch =
      options.repetition_penalty != 1.0 || fills ? 1 : static_cast<size_t>(options.batch_size);
  std::vector<size_t> order(ids.size());  // by length, so that a batch holds little padding
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ids[a].size() < ids[b].size(); });
  for (size_t begin = 0; begin < order.size(); begin += batch)
    impl_->decode(ids, {order.begin() + begin, order.begin() + std::min(order.size(), begin + batch)}, options,
                  on_text, out);
  return out;
}

}  // namespace zoo
