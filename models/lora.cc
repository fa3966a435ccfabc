#include "models/lora.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "models/kernels/dropout.h"

namespace zoo::models {
namespace {

const LoraFactorImpl* factor(const torch::nn::Module& layer, const char* name) {
  for (const auto& child : layer.named_children())
    if (child.key() == name) return dynamic_cast<const LoraFactorImpl*>(child.value().get());
  return nullptr;
}

bool matches(const std::string& name, const std::string& target) {
  return name == target || (name.size() > target.size() && name.compare(name.size() - target.size(), target.size(), target) == 0 &&
                            name[name.size() - target.size() - 1] == '.');
}

bool under(const std::string& name, const std::vector<std::string>& modules) {
  for (const auto& m : modules)
    if (name.rfind(m + ".", 0) == 0 || name.find("." + m + ".") != std::string::npos) return true;
  return false;
}

// The last parts of the names of `modules` ("c_attn", "classifier"; not a layer's number),
// sorted, each once.
std::string name_tails(const std::vector<std::string>& modules) {
  std::vector<std::string> tails;
  for (const auto& m : modules)
    if (m.substr(m.rfind('.') + 1).find_first_not_of("0123456789") != std::string::npos) tails.push_back(m.substr(m.rfind('.') + 1));
  std::sort(tails.begin(), tails.end());
  tails.erase(std::unique(tails.begin(), tails.end()), tails.end());
  return join(tails);
}

// Every name of train.lora.modules_to_save must be a module of the model: one that names none
// would train the adapters alone, without the head it was meant to train.
void check_modules_to_save(const torch::nn::Module& model, const std::vector<std::string>& modules_to_save) {
  std::vector<std::string> names;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) names.push_back(item.key());
  for (const auto& m : modules_to_save) {
    bool found = false;
    for (const auto& p : model.named_parameters()) found = found || under(p.key(), {m});
    if (!found)
      throw Error(cat("train.lora.modules_to_save names '", m, "', which is no module of this model (its modules end "
                      "in: ", name_tails(names), "); name one of them, or leave modules_to_save empty for the task's new head"));
  }
}

}  // namespace

LoraFactorImpl::LoraFactorImpl(int64_t in, int64_t out, double scaling_, double dropout_)
    : scaling(scaling_), dropout(dropout_) {
  weight = register_parameter("weight", torch::zeros({out, in}));
}

torch::Tensor lora_delta(const torch::Tensor& x, const torch::nn::Module& layer) {
  // On every projection: one look at the children, no names copied (add_lora registers
  // lora_A, then lora_B; a Linear has no other children).
  const auto children = layer.children();
  if (children.size() != 2) return {};
  const auto* a = dynamic_cast<const LoraFactorImpl*>(children[0].get());
  const auto* b = dynamic_cast<const LoraFactorImpl*>(children[1].get());
  if (!a || !b) return {};
  const auto h = a->dropout > 0 && layer.is_training() ? apply_dropout(x, a->dropout, /*training=*/true) : x;
  return h.matmul(a->weight.t()).matmul(b->weight.t()).mul(a->scaling);
}

std::vector<std::string> default_lora_targets(const std::string& model_type) {
  if (model_type == "gpt2") return {"c_attn"};
  if (model_type == "bert" || model_type == "vit") return {"query", "value"};
  if (model_type == "transformer") return {"q_proj", "v_proj"};
  return {};
}

std::vector<std::string> add_lora(torch::nn::Module& model, const LoraOptions& o,
                                  const std::vector<std::string>& modules_to_save) {
  check_modules_to_save(model, modules_to_save);
  const double scaling = o.alpha / static_cast<double>(o.r);
  std::vector<std::string> adapted, linears;
  torch::NoGradGuard no_grad;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    auto* linear = item.value()->as<torch::nn::Linear>();
    if (!linear) continue;
    linears.push_back(item.key());
    bool hit = false;
    for (const auto& t : o.target_modules) hit = hit || matches(item.key(), t);
    if (!hit || under(item.key() + ".", modules_to_save)) continue;
    const int64_t in = linear->weight.size(1), out = linear->weight.size(0);
    if (o.r > std::min(in, out))  // a larger rank adds nothing, and a hostile one would exhaust memory
      throw Error(cat("train.lora.r (", o.r, ") exceeds the rank of '", item.key(), "' (", out, " x ", in,
                      "); choose r of at most ", std::min(in, out)));
    auto a = linear->register_module("lora_A", LoraFactor(in, o.r, scaling, o.dropout));
    auto b = linear->register_module("lora_B", LoraFactor(o.r, out, scaling, o.dropout));
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));  // kaiming_uniform_(a=sqrt(5)), as nn.Linear and PEFT
    a->weight.uniform_(-bound, bound);
    a->to(linear->weight.device(), linear->weight.scalar_type());
    b->to(linear->weight.device(), linear->weight.scalar_type());
    adapted.push_back(item.key());
  }
  if (adapted.empty())
    throw Error(cat("train.lora.target_modules [", join(o.target_modules),
                    "] names no linear layer of this model; its linear layers end in: ", name_tails(linears)));
  for (auto& p : model.named_parameters())
    p.value().set_requires_grad(is_lora_name(p.key()) || under(p.key(), modules_to_save));
  return adapted;
}

void merge_lora(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    auto* linear = item.value()->as<torch::nn::Linear>();
    if (!linear) continue;
    const LoraFactorImpl* a = factor(*linear, "lora_A");
    const LoraFactorImpl* b = factor(*linear, "lora_B");
    if (!a || !b) continue;
    linear->weight.add_(b->weight.matmul(a->weight).mul(a->scaling).to(linear->weight.scalar_type()));
    linear->unregister_module("lora_A");
    linear->unregister_module("lora_B");
  }
}

bool is_lora_name(const std::string& name) {
  return name.find(".lora_A.") != std::string::npos || name.find(".lora_B.") != std::string::npos ||
         name.rfind("lora_A.", 0) == 0 || name.rfind("lora_B.", 0) == 0;
}

std::vector<std::pair<std::string, torch::Tensor>> lora_tensors(const torch::nn::Module& model,
                                                                 const std::vector<std::string>& modules_to_save) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : model.named_parameters())
    if (is_lora_name(p.key()) || under(p.key(), modules_to_save)) out.emplace_back(p.key(), p.value());
  return out;
}

}  // namespace zoo::models
