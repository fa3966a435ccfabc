// zoo classify --checkpoint DIR FILE...: label and probability for each image file.
#include <iomanip>
#include <iostream>

#include "data/image_file.h"
#include "tools/commands.h"
#include "train/device.h"
#include "train/task_registry.h"

namespace zoo::cli {

namespace {
struct ClassifyArgs {
  std::string checkpoint;
  std::vector<std::string> files;
  std::string device = "auto";
  int64_t top_k = 1;
};

int run_classify(const ClassifyArgs& a) {
  checked_checkpoint_dir(a.checkpoint);
  const torch::Device device = resolve_device(a.device);
  auto task = load_task(a.checkpoint, {}, device);
  ImageClassifier* classifier = task->image_classifier();
  if (!classifier)
    throw Error(cat(a.checkpoint, ": not an image classification model (task '", task->config().value("task", ""),
                    "'); zoo classify needs one (e.g. vit)"));
  const int64_t channels = classifier->image_channels(), size = classifier->image_size();
  // Decode everything first: a bad file fails before any model work.
  std::vector<torch::Tensor> decoded;
  for (const auto& f : a.files) decoded.push_back(data::load_image(f, channels, size, size));
  const auto labels = classifier->label_names();
  auto probs = classifier->probabilities(torch::stack(decoded));
  const int64_t k = std::min<int64_t>(a.top_k, static_cast<int64_t>(labels.size()));
  auto [p, idx] = probs.topk(k, -1);
  for (size_t i = 0; i < a.files.size(); ++i) {
    std::cout << a.files[i];
    for (int64_t j = 0; j < k; ++j) {
      const int64_t c = idx[i][j].item<int64_t>();
      std::cout << "\t" << labels[c] << "\t" << std::fixed << std::setprecision(4) << p[i][j].item<double>();
    }
    std::cout << "\n";
  }
  return 0;
}
}  // namespace

void setup_classify(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<ClassifyArgs>();
  auto* cmd = app.add_subcommand("classify", "Classify PNG/JPEG/PGM/BMP images with an image model checkpoint");
  cmd->add_option("--checkpoint", a->checkpoint, "checkpoint directory")->required();
  cmd->add_option("files", a->files, "image files")->required()->check(CLI::ExistingFile);
  cmd->add_option("--device", a->device, "auto | cpu | cuda | cuda:N | mps")->capture_default_str();
  cmd->add_option("--top-k", a->top_k, "labels to print per file")->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->callback([a, exit_code] { *exit_code = run_classify(*a); });
}

}  // namespace zoo::cli
