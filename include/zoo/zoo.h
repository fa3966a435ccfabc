#pragma once
// zoo as a library: the one header a program includes to run or train zoo's models.
//
//   find_package(zoo 0.1 REQUIRED)
//   target_link_libraries(app PRIVATE zoo::zoo)
//
//   zoo::Generator gpt("runs/gpt/checkpoint-2000");
//   auto out = gpt.generate({"ROMEO:"}, {.max_new_tokens = 64, .greedy = true});
//
// Every object loads a zoo checkpoint or a Hugging Face directory once and may then be used
// from several threads at once: the weights are shared and read only, each call keeps its own
// state (docs/library.md). Errors are zoo::Error with the messages the zoo command prints.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "zoo/error.h"
#include "zoo/export.h"
#include "zoo/version.h"

namespace zoo {

/// How the predictors below load their model.
struct LoadOptions {
  std::string quantize;  ///< "" (fp32) or "int8" (CPU only)
};

// ---- Text generation (GPT checkpoints, Hugging Face GPT-2 directories) ----------------------

struct GenerationOptions {
  int64_t max_new_tokens = 200;
  bool greedy = false;            ///< the most likely token at each step (else sampling)
  double temperature = 1.0;       ///< > 0; sampling only
  int64_t top_k = 0;              ///< 0: every token
  double top_p = 1.0;             ///< (0, 1]
  int64_t min_tokens_to_keep = 1; ///< top-k/top-p keep at least this many tokens
  double repetition_penalty = 1.0;
  int64_t beam_size = 1;          ///< > 1: beam search (its text comes when the search ends)
  int64_t seed = 0;               ///< sampling's seed, per prompt
  std::vector<std::string> stop;  ///< the text ends before the first of these
  bool use_cache = true;          ///< the key/value cache (false recomputes every step)
  int64_t batch_size = 8;         ///< prompts decoded together (left-padded, similar lengths)
};

struct Generation {
  std::string text;              ///< the continuation alone, without the prompt
  std::vector<int64_t> tokens;   ///< its token ids
  std::string finish_reason;     ///< "stop" (end of text or a stop string) or "length"
  double logprob = 0;            ///< sum of the chosen tokens' log-probabilities
  int64_t prompt_tokens = 0;     ///< tokens of the prompt the model read (after any cut)
  std::vector<std::string> warnings;  ///< GenerationBatch: e.g. the prompt was cut to the context
};

/// Receives each prompt's text as it is produced; returning false stops that prompt.
using GenerationCallback = std::function<bool(size_t prompt_index, const std::string& piece)>;

class ZOO_API Generator {
 public:
  explicit Generator(const std::string& dir, torch::Device device = torch::kCPU, const LoadOptions& load = {});
  ~Generator();
  Generator(Generator&&) noexcept;
  Generator& operator=(Generator&&) noexcept;

  /// One Generation per prompt, in order. Prompts longer than the model's context keep their end.
  std::vector<Generation> generate(const std::vector<std::string>& prompts, const GenerationOptions& options = {}) const;
  std::vector<Generation> generate(const std::vector<std::string>& prompts, const GenerationOptions& options,
                                   const GenerationCallback& on_text) const;
  /// Tokens the model reads at most (its positions).
  int64_t context_size() const;
  /// The prompt's token count (what `usage` counts).
  int64_t count_tokens(const std::string& text) const;

  struct Impl;

 private:
  friend class GenerationBatch;
  std::unique_ptr<Impl> impl_;
};

// ---- Continuous batching (what zoo serve runs) ----------------------------------------------

/// One prompt of a GenerationBatch.
struct GenerationRequest {
  std::string prompt;
  GenerationOptions options;    ///< beam_size 1 (sampling, or greedy); use_cache and batch_size are not read
  bool truncate_prompt = true;  ///< a prompt longer than the context keeps its end (else an Error)
  /// Receives the text as it is produced; returning false drops the row at once (its client left).
  std::function<bool(const std::string& piece)> on_text;
  /// Called once when the row ends by itself (not after on_text returned false).
  std::function<void(Generation)> on_done;
};

/// Generations that join and leave a running batch between decoding steps (continuous
/// batching): each step feeds one token to every row, the rows left-padded and masked, each with
/// its own key/value cache, so that a row decodes as it would alone: greedy rows give
/// Generator::generate's text, and a seeded row draws as it would alone. A row that reaches the
/// context goes on from the last half of its window, as Generator does. On a CPU the rows are
/// spread over one shard per intra-op thread (at::get_num_threads() when the batch is made),
/// whose forward passes run side by side, each on one core. Not thread-safe: one thread calls
/// add() and step() (the callbacks run on it), or run(); the Generator must outlive the batch.
class ZOO_API GenerationBatch {
 public:
  explicit GenerationBatch(const Generator& generator);
  ~GenerationBatch();
  GenerationBatch(GenerationBatch&&) noexcept;
  GenerationBatch& operator=(GenerationBatch&&) noexcept;
  /// Checks the request and encodes its prompt; its row joins at the next step(), which reads the
  /// prompts added since the last step in one forward. Throws zoo::Error for a bad request (the
  /// batch is unchanged).
  void add(GenerationRequest request);
  /// One decoding step for every row; rows that end call on_done and leave.
  void step();
  /// What run() asks before each step of a shard, on that shard's thread: feed(rows, room, idle,
  /// add) adds up to `room` requests with add() (which throws zoo::Error for a bad request, as
  /// add() does) and returns false to end the shard's loop (rows still decoding are dropped
  /// without on_done). `rows`: the shard's rows; `idle`: it has none, so feed may wait for work;
  /// briefly, since a failed step ends run() only once every loop has come back from feed.
  using Feed =
      std::function<bool(size_t rows, size_t room, bool idle, const std::function<void(GenerationRequest)>& add)>;
  /// Decodes until every shard's feed has returned false: each shard in its own loop on its own
  /// thread, never waiting for the others (step() waits for the slowest shard at every step;
  /// with fewer threads than shards, the loops run one after the other).
  /// At most max_rows rows at a time, shared evenly by the shards (fewer rows than shards: one
  /// shard, its operations on every intra-op thread, as step() runs one). The callbacks run on the
  /// shards' threads, at the same time for rows of different shards. A step's exception ends
  /// every loop and is rethrown.
  void run(size_t max_rows, const Feed& feed);
  /// Rows decoding.
  size_t size() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// ---- Translation (zoo translation checkpoints, Hugging Face Marian directories) -------------

struct TranslationOptions {
  int64_t beam_size = 4;          ///< 1: greedy
  int64_t max_length = 50;        ///< target tokens at most, <end> included (capped by the model's positions)
  double length_penalty = 1.0;    ///< beam ranking: log-probability / length^length_penalty
  bool truncate = false;          ///< cut sources longer than the model reads (else an error)
  bool return_attention = false;  ///< fill Translation's tokens and attention rows
  /// Only these target sentences may come out (empty: any). Sentences with a word the model
  /// cannot produce are skipped with a warning naming constrain_file:line (or the index).
  std::vector<std::string> constrain_to;
  std::string constrain_file;
  int64_t batch_size = 64;        ///< sentences decoded together (similar lengths)
};

struct Translation {
  std::string text;                                       ///< "" for a blank source
  double score = 0;                                       ///< length-normalised log-probability
  bool finished = true;                                   ///< false: cut at max_length
  std::vector<std::string> source_tokens, target_tokens;  ///< with return_attention
  std::vector<std::vector<float>> attention;              ///< [target token][source token], with return_attention
};

class ZOO_API Translator {
 public:
  explicit Translator(const std::string& dir, torch::Device device = torch::kCPU, const LoadOptions& load = {});
  /// An ensemble: the checkpoints `dirs` (trained on the same data with the same tokenizers)
  /// decoded as one model, the mean of their next-token distributions at every step.
  Translator(const std::vector<std::string>& dirs, torch::Device device = torch::kCPU, const LoadOptions& load = {});
  ~Translator();
  Translator(Translator&&) noexcept;
  Translator& operator=(Translator&&) noexcept;
  /// One Translation per source, in order (a blank source gives an empty one).
  std::vector<Translation> translate(const std::vector<std::string>& sources,
                                     const TranslationOptions& options = {}) const;
  /// Which attention head return_attention shows (-1: the mean of the heads). It changes the
  /// object for every caller: set it before sharing the object between threads.
  void select_attention_head(int64_t head);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// ---- Classification (BERT text classifiers, ViT image classifiers) ---------------------------

struct Label {
  std::string name;
  float probability = 0;
};

class ZOO_API Classifier {
 public:
  explicit Classifier(const std::string& dir, torch::Device device = torch::kCPU, const LoadOptions& load = {});
  ~Classifier();
  Classifier(Classifier&&) noexcept;
  Classifier& operator=(Classifier&&) noexcept;
  /// "text" (BERT) or "image" (ViT).
  std::string kind() const;
  std::vector<std::vector<Label>> classify_texts(const std::vector<std::string>& texts, int top_k = 1) const;
  /// PNG, JPEG, PGM or BMP files.
  std::vector<std::vector<Label>> classify_images(const std::vector<std::string>& paths, int top_k = 1) const;
  /// The same from encoded image bytes (a file's contents).
  std::vector<std::vector<Label>> classify_image_bytes(const std::vector<std::string>& images, int top_k = 1) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// ---- Sentence embeddings (BERT) --------------------------------------------------------------

enum class Pooling { Mean, Cls };

class ZOO_API Encoder {
 public:
  explicit Encoder(const std::string& dir, torch::Device device = torch::kCPU, const LoadOptions& load = {});
  ~Encoder();
  Encoder(Encoder&&) noexcept;
  Encoder& operator=(Encoder&&) noexcept;
  /// [texts, hidden] float on the CPU: the last layer's states, averaged over each text's tokens
  /// (padding left out), or its [CLS] state.
  torch::Tensor embed(const std::vector<std::string>& texts, Pooling pooling = Pooling::Mean) const;
  int64_t count_tokens(const std::string& text) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// ---- Checkpoints --------------------------------------------------------------------------------

/// The task of a zoo checkpoint or Hugging Face directory, from its config alone:
/// "language_modeling" (Generator), "translation" (Translator), "text_classification" or
/// "image_classification" (Classifier), "bert_pretraining" (Encoder). Throws zoo::Error naming
/// the directory when it holds no model.
ZOO_API std::string checkpoint_task(const std::string& dir);

// ---- Training and evaluation -----------------------------------------------------------------

struct TrainProgress {
  int64_t step = 0, total_steps = 0;
  double loss = 0;
};
using ProgressCallback = std::function<void(const TrainProgress&)>;

/// What `zoo train --config FILE --output-dir DIR [--set K=V]...` does; returns the final
/// metrics as JSON text ({"steps":…, "last_checkpoint":…, "eval":{…}}; with
/// train.average_checkpoints also "averaged_checkpoint" and its "averaged_eval").
ZOO_API std::string train(const std::string& config_file, const std::string& output_dir,
                          const std::vector<std::string>& overrides = {}, const ProgressCallback& progress = {});
/// What `zoo eval --checkpoint DIR --split SPLIT [--quantize int8]` prints: the metrics as
/// JSON text.
ZOO_API std::string evaluate(const std::string& checkpoint_dir, const std::string& split = "",
                             torch::Device device = torch::kCPU, const LoadOptions& load = {});

namespace detail {
/// The installed package's SentencePiece helper program (zoo-spm), registered below.
ZOO_API bool use_spm_helper(const char* path);
}  // namespace detail

// A program built against the installed package (find_package(zoo)) gets ZOO_SPM_HELPER from
// zoo's CMake config: the library learns where zoo-spm is when the program starts.
#ifdef ZOO_SPM_HELPER
inline const bool spm_helper_registered = detail::use_spm_helper(ZOO_SPM_HELPER);
#endif

}  // namespace zoo
