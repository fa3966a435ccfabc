// zoo tokenizer train --input FILE... --model-type char|bpe|unigram|word|wordpiece [--vocab-size N] --out DIR
// zoo tokenizer encode --tokenizer DIR [--side source|target] [TEXT]
//                                                 ids (space-separated) of TEXT, or of each stdin line
// zoo tokenizer decode --tokenizer DIR [--side source|target] ID...   the text of the ids
#include <filesystem>
#include <iostream>

#include "core/error.h"
#include "core/input_file.h"
#include "data/tokenizer.h"
#include "io/inference_model.h"
#include "predict/translator.h"
#include "tools/commands.h"

namespace fs = std::filesystem;

namespace zoo::cli {

namespace {
struct TokenizerArgs {
  std::vector<std::string> inputs;
  std::string model_type = "bpe";
  int64_t vocab_size = 8000;
  std::string out;
  std::string tokenizer;
  std::string side;  // a translation checkpoint's "source" or "target" tokenizer
  std::string text;
  std::vector<int64_t> ids;
};

int run_train(const TokenizerArgs& a) {
  data::TokenizerTrainOptions o;
  o.model_type = a.model_type;
  o.vocab_size = a.vocab_size;
  auto tok = data::train_tokenizer(a.inputs, o);
  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec) throw Error(cat(a.out, ": cannot create: ", ec.message()));
  tok->save(a.out);
  std::cout << "trained a " << tok->kind() << " tokenizer (" << a.model_type << ") of " << tok->vocab_size()
            << " ids into " << a.out << std::endl;
  return 0;
}

// The tokenizer of a directory, or with --side one side of a translation checkpoint (both
// live in one directory), loaded and checked as zoo translate loads them.
std::unique_ptr<data::Tokenizer> open_tokenizer(const TokenizerArgs& a) {
  if (a.side.empty()) return data::load_tokenizer(a.tokenizer);
  const auto [dir, config] = open_inference_source(a.tokenizer, "translation", "zoo tokenizer --side");
  const data::TranslationText text = load_translation_text(dir, config);
  return std::make_unique<data::SideTokenizer>(a.side == "source" ? text.source() : text.target());
}

void print_ids(const std::vector<int64_t>& ids) {
  for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
  std::cout << "\n";
}

int run_encode(const TokenizerArgs& a) {
  auto tok = open_tokenizer(a);
  if (!a.text.empty()) {
    print_ids(tok->encode(a.text));
  } else {
    LineReader stdin_lines(std::cin, "stdin");  // line by line: any length of stream, each line capped
    for (std::string line; stdin_lines.next(line);) {
      try {
        print_ids(tok->encode(line));
      } catch (const Error& e) {
        throw Error(cat("stdin line ", stdin_lines.line_number(), ": ", e.what()));
      }
    }
  }
  return 0;
}
}  // namespace

void setup_tokenizer(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<TokenizerArgs>();
  auto* cmd = app.add_subcommand("tokenizer", "Train a tokenizer, or encode and decode with one");
  cmd->require_subcommand(1);
  auto* train = cmd->add_subcommand("train", "Learn a tokenizer from UTF-8 text files");
  train->add_option("--input", a->inputs, "text files")->required()->check(CLI::ExistingFile);
  train->add_option("--model-type", a->model_type,
                    "char (nanoGPT's character vocabulary) | bpe | unigram | word (SentencePiece) | wordpiece "
                    "(BERT's vocab.txt, as Hugging Face's WordPieceTrainer learns it)")
      ->check(CLI::IsMember({"char", "bpe", "unigram", "word", "wordpiece"}))
      ->capture_default_str();
  train->add_option("--vocab-size", a->vocab_size, "vocabulary size (SentencePiece, WordPiece)")->capture_default_str();
  train->add_option("--out", a->out, "output directory")->required();
  train->callback([a, exit_code] { *exit_code = run_train(*a); });
  auto* encode = cmd->add_subcommand("encode", "Print the ids of TEXT (or of each line of stdin)");
  encode->add_option("--tokenizer", a->tokenizer, "tokenizer or checkpoint directory")->required();
  encode->add_option("--side", a->side, "a translation checkpoint's source or target tokenizer")
      ->check(CLI::IsMember({"source", "target"}));
  encode->add_option("text", a->text, "text to encode (default: stdin, line by line)");
  encode->callback([a, exit_code] { *exit_code = run_encode(*a); });
  auto* decode = cmd->add_subcommand("decode", "Print the text of the ids");
  decode->add_option("--tokenizer", a->tokenizer, "tokenizer or checkpoint directory")->required();
  decode->add_option("--side", a->side, "a translation checkpoint's source or target tokenizer")
      ->check(CLI::IsMember({"source", "target"}));
  decode->add_option("ids", a->ids, "ids")->required();
  decode->callback([a, exit_code] {
    std::cout << open_tokenizer(*a)->decode(a->ids) << std::endl;
    *exit_code = 0;
  });
}

}  // namespace zoo::cli
