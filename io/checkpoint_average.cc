#include "io/checkpoint_average.h"

#include <filesystem>
#include <map>

#include <torch/torch.h>

#include "core/error.h"
#include "io/checkpoint.h"
#include "io/config.h"
#include "io/model_files.h"

namespace fs = std::filesystem;

namespace zoo {

namespace {

// What a run's checkpoint holds besides its model that the averaged model must not carry.
bool training_state(const std::string& name) {
  return name == "optimizer.pt" || name == "trainer_state.json" || name == "training_weights.safetensors" ||
         name == "model.safetensors" || name == "model.safetensors.index.json" ||
         (name.rfind("model-", 0) == 0 && name.find(".safetensors") != std::string::npos);
}

// Adds `file`'s floating-point tensors to `sum` (float64), checking them against `newest`.
void accumulate(const std::string& dir, const safetensors::File& file, const safetensors::File& newest,
                std::map<std::string, torch::Tensor>& sum) {
  torch::NoGradGuard no_grad;
  if (file.tensors.size() != newest.tensors.size())
    throw Error(cat(dir, ": ", file.tensors.size(), " tensors where the newest checkpoint has ", newest.tensors.size(),
                    "; average checkpoints of one run only"));
  for (const auto& [name, ref] : newest.tensors) {
    const auto it = file.tensors.find(name);
    if (it == file.tensors.end())
      throw Error(cat(dir, ": no tensor '", name, "', which the newest checkpoint has; average checkpoints of one run only"));
    const torch::Tensor& t = it->second;
    if (t.sizes() != ref.sizes() || t.scalar_type() != ref.scalar_type())
      throw Error(cat(dir, ": tensor '", name, "' is ", t.scalar_type(), " ", t.sizes(), " where the newest checkpoint's is ",
                      ref.scalar_type(), " ", ref.sizes(), "; average checkpoints of one run only"));
    if (!ref.is_floating_point()) continue;
    auto [slot, fresh] = sum.try_emplace(name, torch::Tensor());
    if (fresh) slot->second = t.to(torch::kFloat64);
    else slot->second.add_(t.to(torch::kFloat64));
  }
}

void copy_assets(const std::string& from, const std::string& to) {
  for (const auto& entry : fs::directory_iterator(from)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || training_state(name)) continue;
    fs::copy_file(entry.path(), fs::path(to) / name, fs::copy_options::overwrite_existing);
  }
}

}  // namespace

std::vector<std::string> newest_checkpoints(const std::string& output_dir, int64_t count) {
  const auto all = list_checkpoints(output_dir);
  if (count < 1 || static_cast<int64_t>(all.size()) < count)
    throw Error(cat(output_dir, ": ", all.size(), " checkpoint(s), ", count,
                    " to average; keep more with train.save_steps (more often) and train.save_total_limit (0 = all, "
                    "or at least ", count, ")"));
  std::vector<std::string> out;
  for (size_t i = all.size() - static_cast<size_t>(count); i < all.size(); ++i) out.push_back(all[i].second);
  return out;
}

std::string average_checkpoints(const std::vector<std::string>& checkpoints, const std::string& output_dir) {
  if (checkpoints.empty()) throw Error("average_checkpoints: no checkpoints given");
  const std::string newest_dir = checked_checkpoint_dir(checkpoints.back());
  safetensors::File newest = load_weights(newest_dir);
  std::map<std::string, torch::Tensor> sum;
  for (const auto& dir : checkpoints) {
    const std::string checked = checked_checkpoint_dir(dir);
    accumulate(checked, checked == newest_dir ? newest : load_weights(checked), newest, sum);
  }
  const double n = static_cast<double>(checkpoints.size());
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& [name, t] : newest.tensors) {
    const auto it = sum.find(name);
    tensors.emplace_back(name, it == sum.end() ? t : (it->second / n).to(t.scalar_type()));
  }
  const fs::path final_dir = fs::path(output_dir) / kAveragedCheckpoint;
  const fs::path tmp = fs::path(output_dir) / (std::string(".") + kAveragedCheckpoint + ".tmp");
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) throw Error(cat(tmp.string(), ": cannot create: ", ec.message()));
  try {
    copy_assets(newest_dir, tmp.string());
    save_weights(tmp.string(), tensors, newest.metadata);
    json steps = json::array(), dirs = json::array();
    for (const auto& dir : checkpoints) {
      const int64_t step = checkpoint_step(dir);
      dirs.push_back(fs::path(dir).filename().string());
      steps.push_back(step >= 0 ? json(step) : json(nullptr));
    }
    write_json_file((tmp / "averaged_from.json").string(), json{{"checkpoints", dirs}, {"steps", steps}});
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp, ec);
    throw Error(cat(final_dir.string(), ": cannot write: ", e.what()));
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  fs::remove_all(final_dir, ec);
  fs::rename(tmp, final_dir, ec);
  if (ec) throw Error(cat(final_dir.string(), ": cannot move into place: ", ec.message()));
  return final_dir.string();
}

}  // namespace zoo
