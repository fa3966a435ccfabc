#include "models/encoder_decoder_ensemble.h"

#include <string>

#include "core/error.h"
#include "models/kernels/softmax_rows.h"

namespace zoo::models {
namespace {
std::string member_prefix(size_t m) { return cat(m, "/"); }

std::string origins(const std::vector<std::shared_ptr<EncoderDecoder>>& members) {
  std::string out;
  for (size_t m = 0; m < members.size(); ++m)
    out += cat(m ? ", " : "", members[m]->origin().empty() ? cat("member ", m) : members[m]->origin());
  return out;
}
}  // namespace

EncoderDecoderEnsemble::EncoderDecoderEnsemble(std::vector<std::shared_ptr<EncoderDecoder>> members)
    : members_(std::move(members)), module_(std::make_shared<torch::nn::Module>("EncoderDecoderEnsemble")) {
  if (members_.empty()) throw Error("an ensemble needs at least one model");
  for (size_t m = 0; m < members_.size(); ++m) {
    if (members_[m]->pad_id() != pad_id())
      throw Error(cat("ensemble of ", origins(members_), ": member ", m, " pads with id ", members_[m]->pad_id(),
                      ", the first with ", pad_id(), ": the members must share their vocabularies"));
    module_->register_module(std::to_string(m), members_[m]->module());
  }
  set_origin(origins(members_));
}

DecoderState EncoderDecoderEnsemble::start(const torch::Tensor& src) {
  DecoderState state;
  for (size_t m = 0; m < members_.size(); ++m) state.put(member_prefix(m), members_[m]->start(src));
  return state;
}

torch::Tensor EncoderDecoderEnsemble::step(const torch::Tensor& prev_tokens, DecoderState& state) {
  std::vector<torch::Tensor> log_probs, attention;
  for (size_t m = 0; m < members_.size(); ++m) {
    DecoderState own = state.take(member_prefix(m));
    log_probs.push_back(members_[m]->step(prev_tokens, own));
    if (state.wants_attention()) {
      auto a = members_[m]->attention(own);
      if (a.defined()) attention.push_back(std::move(a));
    }
    state.put(member_prefix(m), std::move(own));
    if (log_probs.back().sizes() != log_probs.front().sizes())
      throw Error(cat("ensemble of ", origins(members_), ": member ", m, " scores ", log_probs.back().size(-1),
                      " tokens, the first ", log_probs.front().size(-1), ": the members must share their vocabularies"));
  }
  if (attention.empty())
    state.erase("attention");
  else
    state.set("attention", torch::stack(attention).mean(0));
  return log_probs.size() == 1 ? log_probs.front() : log_mean_of_distributions(log_probs);
}

torch::Tensor EncoderDecoderEnsemble::attention(const DecoderState& state) const {
  return state.has("attention") ? state.get("attention") : torch::Tensor();
}

torch::Tensor EncoderDecoderEnsemble::forward(const torch::Tensor& src, const torch::Tensor& tgt_in,
                                              double teacher_forcing_ratio, torch::Generator* generator) {
  std::vector<torch::Tensor> log_probs;
  for (auto& member : members_)
    log_probs.push_back(
        torch::log_softmax(member->forward(src, tgt_in, teacher_forcing_ratio, generator).to(torch::kFloat), -1));
  return log_mean_of_distributions(log_probs);
}

bool EncoderDecoderEnsemble::random_only_in_dropout() const {
  for (const auto& member : members_)
    if (!member->random_only_in_dropout()) return false;
  return true;
}

int64_t EncoderDecoderEnsemble::max_positions() const {
  int64_t fewest = 0;
  for (const auto& member : members_) {
    const int64_t p = member->max_positions();
    if (p > 0 && (fewest == 0 || p < fewest)) fewest = p;
  }
  return fewest;
}

int64_t EncoderDecoderEnsemble::attention_heads() const {
  const int64_t heads = members_.front()->attention_heads();
  for (const auto& member : members_)
    if (member->attention_heads() != heads) return 0;
  return heads;
}

void EncoderDecoderEnsemble::select_attention_head(int64_t head) {
  if (head >= 0 && attention_heads() == 0) {
    EncoderDecoder::select_attention_head(head);  // the refusal
    return;
  }
  for (auto& member : members_) member->select_attention_head(head);
}

}  // namespace zoo::models
