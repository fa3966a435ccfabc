// zoo classify --checkpoint DIR [FILE...]: label and probability for each image file, or with a
// text model for each text file or, without files, each line of stdin.
#include <fstream>
#include <iomanip>
#include <sstream>
#include <iostream>

#include "core/error.h"
#include "core/input_file.h"
#include "data/text.h"
#include "tools/commands.h"
#include "train/device.h"
#include "zoo/zoo.h"

namespace zoo::cli {

namespace {
struct ClassifyArgs {
  std::string checkpoint;
  std::vector<std::string> files;
  std::string device = "auto";
  std::string quantize;  // "" (fp32) or "int8"
  int64_t top_k = 1;
};

std::string read_file_text(const std::string& path) {
  return read_text_input(path, "text");
}

// Prints NAME<TAB>label<TAB>probability (the top k) per input.
void print_top(const std::vector<std::string>& names, const std::vector<std::vector<Label>>& labels) {
  for (size_t i = 0; i < names.size(); ++i) {
    std::cout << names[i];
    for (const auto& l : labels[i]) std::cout << "\t" << l.name << "\t" << std::fixed << std::setprecision(4) << l.probability;
    std::cout << "\n";
  }
}

// Texts: each file is one text; without files, each line of stdin is one (blank lines are
// answered with an empty line, so outputs stay aligned with inputs).
int classify_texts(const Classifier& classifier, const ClassifyArgs& a) {
  std::vector<std::string> names, texts;
  if (a.files.empty()) {
    texts = read_input_lines(std::cin, "stdin");
    for (size_t i = 1; i <= texts.size(); ++i) names.push_back(cat("line ", i));
  } else {
    for (const auto& f : a.files) {
      texts.push_back(read_file_text(f));
      names.push_back(f);
    }
  }
  for (size_t i = 0; i < texts.size(); ++i) data::check_utf8(texts[i], names[i]);
  std::vector<std::string> part, part_names;
  const auto flush = [&] {
    if (!part.empty()) print_top(part_names, classifier.classify_texts(part, static_cast<int>(a.top_k)));
    part.clear(), part_names.clear();
  };
  for (size_t i = 0; i < texts.size(); ++i) {
    if (data::python_strip(texts[i]).empty()) {
      flush();
      std::cout << names[i] << "\n";
      continue;
    }
    part.push_back(texts[i]);
    part_names.push_back(names[i]);
  }
  flush();
  return 0;
}

int run_classify(const ClassifyArgs& a) {
  checked_checkpoint_dir(a.checkpoint);
  const Classifier classifier(a.checkpoint, quantized_device(a.device, a.quantize), LoadOptions{a.quantize});
  if (classifier.kind() == "text") return classify_texts(classifier, a);
  if (a.files.empty()) throw Error("zoo classify: give the image files to classify");
  print_top(a.files, classifier.classify_images(a.files, static_cast<int>(a.top_k)));
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
  add_quantize_option(cmd, &a->quantize);
  cmd->add_option("--top-k", a->top_k, "labels to print per file")->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->callback([a, exit_code] { *exit_code = run_classify(*a); });
}

}  // namespace zoo::cli
