#include "serve/models.h"

#include <ctime>
#include <iostream>

#include <ATen/Parallel.h>

#include "serve/server.h"  // ServeOptions

namespace zoo::serve {

namespace {

const int64_t kStarted = std::time(nullptr);

// The items of each job's inputs, from the outputs of all the group's inputs in order.
template <class Request, class Inputs, class Answer>
void answer_group(const std::vector<std::shared_ptr<BatchJob>>& group, Inputs inputs_of, Answer answer) {
  std::vector<std::string> all;
  for (const auto& job : group) {
    const auto& in = inputs_of(*std::static_pointer_cast<Request>(job->request));
    all.insert(all.end(), in.begin(), in.end());
  }
  const json items = answer(*std::static_pointer_cast<Request>(group.front()->request), all);
  size_t next = 0;
  for (const auto& job : group) {
    json mine = json::array();
    for (size_t i = 0; i < job->inputs; ++i) {
      json item = items[next++];
      item["index"] = i;
      mine.push_back(std::move(item));
    }
    job->finish(std::move(mine));
  }
}

json translations(const Translator& t, TranslationOptions o, const std::vector<std::string>& input, int64_t batch) {
  o.batch_size = batch;  // on a CPU each BatchWorker lane already holds its own core
  json items = json::array();
  for (auto& tr : t.translate(input, o)) {
    json item = {{"text", tr.text}, {"score", tr.score}, {"finished", tr.finished}};
    if (o.return_attention)
      item.update({{"source_tokens", tr.source_tokens}, {"target_tokens", tr.target_tokens}, {"attention", tr.attention}});
    items.push_back(std::move(item));
  }
  return items;
}

json labels(const std::vector<std::vector<Label>>& all) {
  json items = json::array();
  for (const auto& labels : all) {
    json l = json::array();
    for (const auto& x : labels) l.push_back({{"label", x.name}, {"probability", x.probability}});
    items.push_back({{"labels", l}});
  }
  return items;
}

json embeddings(const Encoder& e, Pooling pooling, const std::vector<std::string>& input) {
  const torch::Tensor vectors = e.embed(input, pooling).to(torch::kFloat).contiguous();
  json items = json::array();
  for (int64_t i = 0; i < vectors.size(0); ++i) {
    const float* row = vectors[i].data_ptr<float>();
    items.push_back({{"object", "embedding"}, {"embedding", std::vector<float>(row, row + vectors.size(1))}});
  }
  return items;
}

}  // namespace

json ServedModel::card() const {
  json c = {{"id", name}, {"object", "model"}, {"created", kStarted}, {"owned_by", "zoo"}, {"task", task}};
  if (generator) c["context_length"] = generator->context_size();
  if (classifier) c["input"] = classifier->kind();
  if (encoder && task != "embeddings") c["also"] = json::array({"embeddings"});
  return c;
}

size_t Models::size() const { return options_.checkpoints.size(); }

std::unique_ptr<BatchWorker> Models::batch_worker(ServedModel& m, const std::string& task) {
  const int64_t batch = options_.max_batch_size;
  BatchWorker::Run run;
  if (task == "translate")
    run = [&m, batch](const auto& group) {
      answer_group<TranslateRequest>(group, [](const TranslateRequest& r) -> const auto& { return r.input; },
                                     [&](const TranslateRequest& r, const std::vector<std::string>& all) {
                                       return translations(*m.translator, r.options, all, batch);
                                     });
    };
  else if (task == "classify")
    run = [&m](const auto& group) {
      answer_group<ClassifyRequest>(
          group, [](const ClassifyRequest& r) -> const auto& { return r.images.empty() ? r.texts : r.images; },
          [&](const ClassifyRequest& r, const std::vector<std::string>& all) {
            const int k = static_cast<int>(r.top_k);
            return labels(r.images.empty() ? m.classifier->classify_texts(all, k)
                                           : m.classifier->classify_image_bytes(all, k));
          });
    };
  else
    run = [&m](const auto& group) {
      answer_group<EmbeddingsRequest>(group, [](const EmbeddingsRequest& r) -> const auto& { return r.input; },
                                      [&](const EmbeddingsRequest& r, const std::vector<std::string>& all) {
                                        return embeddings(*m.encoder, r.pooling, all);
                                      });
    };
  // On a CPU, a lane per thread: groups answered side by side, each on its own core.
  const int64_t lanes = options_.device.is_cpu() ? at::get_num_threads() : 1;
  return std::make_unique<BatchWorker>(m.name, std::move(run), batch, options_.max_queue,
                                       std::chrono::milliseconds(options_.gather_ms), metrics_, lanes);
}

void Models::load() {
  for (const auto& [name, dir] : options_.checkpoints) {
    auto m = std::make_unique<ServedModel>();
    m->name = name, m->dir = dir;
    const std::string task = checkpoint_task(dir);
    const auto start = std::chrono::steady_clock::now();
    LoadOptions load;
    load.quantize = options_.quantize;
    if (task == "language_modeling") {
      m->task = "completions";
      m->generator = std::make_unique<Generator>(dir, options_.device, load);
      m->completions = std::make_unique<CompletionWorker>(*m->generator, name, options_.max_batch_size,
                                                          options_.max_queue, metrics_);
    } else if (task == "translation") {
      m->task = "translate";
      m->translator = std::make_unique<Translator>(dir, options_.device, load);
      m->batches = batch_worker(*m, "translate");
    } else if (task == "text_classification" || task == "image_classification") {
      m->task = "classify";
      m->classifier = std::make_unique<Classifier>(dir, options_.device, load);
      m->batches = batch_worker(*m, "classify");
      if (task == "text_classification") m->encoder = std::make_unique<Encoder>(dir, options_.device, load);
    } else if (task == "bert_pretraining") {
      m->task = "embeddings";
      m->encoder = std::make_unique<Encoder>(dir, options_.device, load);
    } else {
      throw Error(dir + ": a model for '" + task + "', which zoo serve does not answer for");
    }
    if (m->encoder) m->embeddings = batch_worker(*m, "embeddings");
    std::cerr << "zoo serve: " << name << " = " << dir << " (" << m->task << ") loaded in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s" << std::endl;
    models_.push_back(std::move(m));
  }
}

ServedModel& Models::find(const std::string& name, const std::string& task) {
  auto serves = [&](const ServedModel& m) { return task == "embeddings" ? m.encoder != nullptr : m.task == task; };
  if (name.empty()) {
    ServedModel* only = nullptr;
    for (auto& m : models_)
      if (serves(*m)) {
        if (only) throw invalid("model is required: more than one model here does " + task, "model");
        only = m.get();
      }
    if (!only) throw ApiError(404, "no model here does " + task + " (GET /v1/models lists them)", "model", "",
                              "model_not_found");
    return *only;
  }
  for (auto& m : models_)
    if (m->name == name) {
      if (!serves(*m)) throw invalid("model " + name + " does " + m->task + ", not " + task, "model");
      return *m;
    }
  std::string known;
  for (const auto& m : models_) known += (known.empty() ? "" : ", ") + m->name;
  throw ApiError(404, "the model '" + name + "' does not exist here (models: " + known + ")", "model", "",
                 "model_not_found");
}

json Models::cards() const {
  json all = json::array();
  for (const auto& m : models_) all.push_back(m->card());
  return all;
}

void Models::stop() {
  for (auto& m : models_) {
    if (m->completions) m->completions->stop(true);
    if (m->batches) m->batches->stop();
    if (m->embeddings) m->embeddings->stop();
  }
}

}  // namespace zoo::serve
