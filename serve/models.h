#pragma once
// The checkpoints zoo serve answers with: each loaded once through the library (zoo/zoo.h) as
// what its task needs, with the worker thread that runs it (serve/workers.h).
#include <memory>
#include <string>
#include <vector>

#include "serve/metrics.h"
#include "serve/requests.h"
#include "serve/workers.h"
#include "zoo/zoo.h"

namespace zoo::serve {

struct ServeOptions;

struct ServedModel {
  std::string name, dir;
  std::string task;  // "completions", "translate", "classify" or "embeddings"
  std::unique_ptr<Generator> generator;
  std::unique_ptr<Translator> translator;
  std::unique_ptr<Classifier> classifier;
  std::unique_ptr<Encoder> encoder;  // embeddings: BERT pretraining checkpoints and text classifiers
  std::unique_ptr<CompletionWorker> completions;
  std::unique_ptr<BatchWorker> batches;    // translate or classify
  std::unique_ptr<BatchWorker> embeddings;
  json card() const;
};

class Models {
 public:
  Models(const ServeOptions& options, Metrics& metrics) : options_(options), metrics_(metrics) {}
  /// Loads every checkpoint; throws zoo::Error naming the one that fails.
  void load();
  /// The model named `name` ("" : the only one that can do `task`) for `task`: 404 for an
  /// unknown name, 400 for a model that does another task.
  ServedModel& find(const std::string& name, const std::string& task);
  json cards() const;
  size_t size() const;
  /// Stops the workers; requests still waiting fail (503).
  void stop();

 private:
  std::unique_ptr<BatchWorker> batch_worker(ServedModel& m, const std::string& task);
  const ServeOptions& options_;
  Metrics& metrics_;
  std::vector<std::unique_ptr<ServedModel>> models_;
};

}  // namespace zoo::serve
