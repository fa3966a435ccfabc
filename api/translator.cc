// zoo::Translator: translation with a GRU or Transformer encoder-decoder (predict/translator.h).
#include "zoo/zoo.h"

#include <iostream>

#include "api/labels.h"
#include "core/error.h"
#include "data/text.h"
#include "models/quantize.h"
#include "models/generation.h"
#include "predict/translator.h"

namespace zoo {

namespace {

void check_options(const TranslationOptions& o) {
  api::check_range<int64_t>("beam_size", o.beam_size, 1, 64);
  api::check_range<int64_t>("max_length", o.max_length, 1, 1000);
  api::check_range("length_penalty", o.length_penalty, -10.0, 10.0);
  api::check_range<int64_t>("batch_size", o.batch_size, 1, 4096);
}

// The sentences constrain_to allows, as a prefix tree over target ids; `longest` is the longest.
std::unique_ptr<models::PrefixTree> constraint_of(const SentenceTranslator& t, const TranslationOptions& o,
                                                  int64_t* longest) {
  std::vector<std::vector<int64_t>> allowed;
  int64_t skipped = 0;
  const std::string name = o.constrain_file.empty() ? "constrain_to" : o.constrain_file;
  for (size_t i = 0; i < o.constrain_to.size(); ++i) {
    if (data::python_strip(o.constrain_to[i]).empty()) continue;
    std::string why;
    auto ids = t.encode_target(o.constrain_to[i], &why);
    if (!ids) {
      std::cerr << "zoo: warning: " << name << (o.constrain_file.empty() ? "[" : ":") << (o.constrain_file.empty() ? i : i + 1)
                << (o.constrain_file.empty() ? "]" : "") << ": skipped: " << why << std::endl;
      ++skipped;
      continue;
    }
    *longest = std::max<int64_t>(*longest, static_cast<int64_t>(ids->size()));
    allowed.push_back(std::move(*ids));
  }
  if (allowed.empty())
    throw Error(cat(o.constrain_file.empty() ? "constrain_to" : "--constrain " + o.constrain_file,
                    ": no usable sentence (", skipped,
                    " skipped for words outside the model's target vocabulary, the rest blank); list English "
                    "sentences made of words the model knows"));
  return std::make_unique<models::PrefixTree>(allowed, t.eos_id());
}

Translation public_translation(SentenceTranslation&& t, bool attention) {
  Translation out;
  out.text = std::move(t.text);
  out.score = t.score;
  out.finished = t.finished || out.text.empty();
  if (!attention || !t.attention.defined()) return out;
  out.source_tokens = std::move(t.source_tokens);
  out.target_tokens = std::move(t.target_tokens);
  const auto rows = t.attention.to(torch::kCPU, torch::kFloat).contiguous();
  for (int64_t r = 0; r < rows.size(0); ++r) {
    const float* p = rows[r].data_ptr<float>();
    out.attention.emplace_back(p, p + rows.size(1));
  }
  return out;
}

}  // namespace

struct Translator::Impl {
  std::unique_ptr<SentenceTranslator> translator;
};

Translator::Translator(const std::string& dir, torch::Device device, const LoadOptions& load)
    : Translator(std::vector<std::string>{dir}, device, load) {}

Translator::Translator(const std::vector<std::string>& dirs, torch::Device device, const LoadOptions& load)
    : impl_(std::make_unique<Impl>()) {
  if (dirs.empty()) throw Error("Translator: no checkpoint directory given");
  models::check_quantize(load.quantize, device, "LoadOptions::quantize");
  impl_->translator = load_translator(dirs.front(), device, /*truncate=*/false, load.quantize,
                                      std::vector<std::string>(dirs.begin() + 1, dirs.end()));
}
Translator::~Translator() = default;
Translator::Translator(Translator&&) noexcept = default;
Translator& Translator::operator=(Translator&&) noexcept = default;

void Translator::select_attention_head(int64_t head) { impl_->translator->select_attention_head(head); }

std::vector<Translation> Translator::translate(const std::vector<std::string>& sources,
                                               const TranslationOptions& options) const {
  check_options(options);
  for (size_t i = 0; i < sources.size(); ++i) data::check_utf8(sources[i], cat("source ", i));
  if (sources.empty()) return {};
  SentenceTranslator& t = *impl_->translator;
  int64_t max_length = options.max_length, longest = 0;
  std::unique_ptr<models::PrefixTree> constraint;
  if (!options.constrain_to.empty() || !options.constrain_file.empty()) {
    constraint = constraint_of(t, options, &longest);
    max_length = std::max(max_length, longest + 1);  // room for every allowed sentence and <end>
  }
  torch::NoGradGuard no_grad;
  auto search = t.generation_options(options.beam_size, max_length, options.length_penalty);
  search.attention = options.return_attention;
  auto found = t.translate(sources, search, constraint.get(), options.batch_size,
                           options.truncate ? std::optional<bool>(true) : std::nullopt);
  std::vector<Translation> out;
  for (auto& f : found) out.push_back(public_translation(std::move(f), options.return_attention));
  return out;
}

}  // namespace zoo
