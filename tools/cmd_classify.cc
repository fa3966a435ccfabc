// zoo classify --checkpoint DIR [FILE...]: label and probability for each image file, or with a
// text model for each text file or, without files, each line of stdin.
#include <fstream>
#include <iomanip>
#include <sstream>
#include <iostream>

#include "core/input_file.h"
#include "data/image_file.h"
#include "data/text.h"
#include "tools/commands.h"
#include "io/inference_model.h"
#include "predict/image_classifier.h"
#include "predict/text_classifier.h"
#include "train/device.h"

namespace zoo::cli {

namespace {
struct ClassifyArgs {
  std::string checkpoint;
  std::vector<std::string> files;
  std::string device = "auto";
  int64_t top_k = 1;
};

std::string read_file_text(const std::string& path) {
  return read_text_input(path, "text");
}

// Prints NAME<TAB>label<TAB>probability (the top k) per row of `probs`.
void print_top(const std::vector<std::string>& names, const std::vector<std::string>& labels, const torch::Tensor& probs,
               int64_t top_k) {
  const int64_t k = std::min<int64_t>(top_k, static_cast<int64_t>(labels.size()));
  auto [p, idx] = probs.topk(k, -1);
  for (size_t i = 0; i < names.size(); ++i) {
    std::cout << names[i];
    for (int64_t j = 0; j < k; ++j)
      std::cout << "\t" << labels[idx[i][j].item<int64_t>()] << "\t" << std::fixed << std::setprecision(4)
                << p[i][j].item<double>();
    std::cout << "\n";
  }
}

// Texts: each file is one text; without files, each line of stdin is one (blank lines are
// answered with an empty line, so outputs stay aligned with inputs).
int classify_texts(TextClassifier& classifier, const ClassifyArgs& a) {
  std::vector<std::string> names, texts;
  if (a.files.empty()) {
    for (std::string line; std::getline(std::cin, line);) {
      texts.push_back(line);
      names.push_back(cat("line ", texts.size()));
    }
  } else {
    for (const auto& f : a.files) {
      texts.push_back(read_file_text(f));
      names.push_back(f);
    }
  }
  for (size_t i = 0; i < texts.size(); ++i) data::check_utf8(texts[i], names[i]);
  const auto labels = classifier.label_names();
  constexpr size_t kBatch = 32;
  for (size_t s = 0; s < texts.size(); s += kBatch) {
    std::vector<std::string> part, part_names;
    for (size_t i = s; i < std::min(texts.size(), s + kBatch); ++i) {
      if (data::python_strip(texts[i]).empty()) {
        if (!part.empty()) print_top(part_names, labels, classifier.probabilities(part), a.top_k);
        part.clear(), part_names.clear();
        std::cout << names[i] << "\n";
        continue;
      }
      part.push_back(texts[i]);
      part_names.push_back(names[i]);
    }
    if (!part.empty()) print_top(part_names, labels, classifier.probabilities(part), a.top_k);
  }
  return 0;
}

int run_classify(const ClassifyArgs& a) {
  checked_checkpoint_dir(a.checkpoint);
  const torch::Device device = resolve_device(a.device);
  const auto source = open_inference_source(a.checkpoint);
  require_task(source, a.checkpoint, {"text_classification", "image_classification"}, "zoo classify");
  if (source.task() == "text_classification") return classify_texts(*load_text_classifier(source, device), a);
  if (a.files.empty()) throw Error("zoo classify: give the image files to classify");
  const auto classifier = load_image_classifier(source, device);
  const int64_t channels = classifier->image_channels(), size = classifier->image_size();
  // Decode everything first: a bad file fails before any model work.
  std::vector<torch::Tensor> decoded;
  for (const auto& f : a.files) decoded.push_back(data::load_image(f, channels, size, size));
  print_top(a.files, classifier->label_names(), classifier->probabilities(torch::stack(decoded)), a.top_k);
  return 0;
}
}  // namespace

void setup_classify(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<ClassifyArgs>();
  auto* cmd = app.add_subcommand(
      "classify", "Classify images (PNG/JPEG/PGM/BMP) or texts (a file each, or one per line of stdin) with a checkpoint");
  cmd->add_option("--checkpoint", a->checkpoint, "checkpoint directory")->required();
  cmd->add_option("files", a->files, "image files, or text files (one text each); texts: stdin lines when none")
      ->check(CLI::ExistingFile);
  cmd->add_option("--device", a->device, "auto | cpu | cuda | cuda:N | mps")->capture_default_str();
  cmd->add_option("--top-k", a->top_k, "labels to print per file")->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->callback([a, exit_code] { *exit_code = run_classify(*a); });
}

}  // namespace zoo::cli
