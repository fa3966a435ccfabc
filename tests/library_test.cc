// zoo as a library (issue 62): <zoo/zoo.h>'s classes on checkpoints the tests train, their
// answers against the command line's, 8 threads against one, and the errors they promise.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "fixtures.h"
#include "predictor_fixtures.h"
#include "review_fixtures.h"
#include "test_util.h"
#include "translation_fixtures.h"
#include "zoo/zoo.h"

namespace fs = std::filesystem;

namespace zoo {
namespace {

// One tiny GPT, ViT and BERT classifier, trained once for the suite.
class Library : public test::TinyPredictorSuite<Library> {
 public:
  static std::vector<std::string> families() { return {"gpt", "vit", "mt", "bert"}; }
};

// Runs f(i) on 8 threads at once.
template <class F>
void on_eight_threads(F f) {
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) threads.emplace_back([&f, i] { f(i); });
  for (auto& t : threads) t.join();
}

TEST_F(Library, GeneratorGivesTheCommandLinesGreedyText) {
  const Generator g(gpt());
  GenerationOptions o;
  o.greedy = true;
  o.max_new_tokens = 24;
  const auto out = g.generate({"the cat", "a dog ran"}, o);
  ASSERT_EQ(out.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const std::string prompt = i == 0 ? "the cat" : "a dog ran";
    const auto cli = test::run(std::string(ZOO_BINARY) + " generate --checkpoint " + gpt() + " --greedy --prompt '" +
                               prompt + "' --max-new-tokens 24 2>/dev/null");
    ASSERT_EQ(cli.exit_code, 0) << cli.output;
    EXPECT_EQ(cli.output, prompt + out[i].text + "\n") << "prompt " << i;
    EXPECT_TRUE(out[i].finish_reason == "length" || out[i].finish_reason == "stop") << out[i].finish_reason;
    EXPECT_LE(out[i].tokens.size(), 24u);
    EXPECT_LT(out[i].logprob, 0.0);
  }
  // Streaming: the pieces add up to the text; a callback returning false stops its prompt.
  std::string streamed;
  g.generate({"the cat"}, o, [&](size_t, const std::string& piece) {
    streamed += piece;
    return true;
  });
  EXPECT_EQ(streamed, out[0].text);
  size_t pieces = 0;
  const auto cut = g.generate({"the cat"}, o, [&](size_t, const std::string&) { return ++pieces < 3; });
  EXPECT_EQ(cut[0].finish_reason, "stop");
  EXPECT_LT(cut[0].tokens.size(), out[0].tokens.size());
  // A stop string ends the text before it.
  GenerationOptions stop = o;
  stop.stop = {" "};
  const auto stopped = g.generate({"the cat"}, stop);
  EXPECT_EQ(stopped[0].text.find(' '), std::string::npos) << stopped[0].text;
  EXPECT_EQ(stopped[0].finish_reason, "stop");
}

// Continuous batching: rows that join at different steps, past the context (n_positions 32),
// give the text each prompt gives alone: greedy, and seeded sampling; a row whose callback
// returns false leaves without on_done; the others are not disturbed.
TEST_F(Library, GenerationBatchRowsDecodeAsTheyWouldAlone) {
  const Generator g(gpt());
  const std::vector<std::string> prompts = {"the cat", "a dog ran in the", "w", "the cat sat on the mat. we sing"};
  GenerationOptions greedy;
  greedy.greedy = true;
  greedy.max_new_tokens = 40;  // past the 32 positions: rows go on from half their window
  GenerationOptions sampled;
  sampled.max_new_tokens = 30;
  sampled.temperature = 0.9;
  sampled.top_k = 10;
  sampled.seed = 7;
  std::vector<Generation> alone;
  for (size_t i = 0; i < prompts.size(); ++i) alone.push_back(g.generate({prompts[i]}, i == 2 ? sampled : greedy)[0]);

  // One shard (a GPU, or one thread) and two (each shard's step on its own core).
  const int threads = at::get_num_threads();
  for (int shards : {1, 2}) {
    SCOPED_TRACE(cat(shards, " shard(s)"));
    at::set_num_threads(shards);
    GenerationBatch batch(g);
    std::vector<Generation> done(prompts.size());
    std::vector<std::string> streamed(prompts.size());
    std::vector<int> finished(prompts.size(), 0);
    int cancelled_pieces = 0;
    auto request = [&](size_t i) {
      GenerationRequest r;
      r.prompt = prompts[i];
      r.options = i == 2 ? sampled : greedy;
      r.on_text = [&, i](const std::string& piece) { return streamed[i] += piece, true; };
      r.on_done = [&, i](Generation gen) { done[i] = std::move(gen), ++finished[i]; };
      return r;
    };
    GenerationRequest leaving = request(0);
    leaving.on_text = [&](const std::string&) { return ++cancelled_pieces < 5; };
    leaving.on_done = [&](Generation) { ADD_FAILURE() << "a row whose client left must not call on_done"; };
    batch.add(request(0));
    batch.add(std::move(leaving));
    for (int step = 0; step < 200 && (batch.size() > 0 || step < 30); ++step) {
      if (step == 3) batch.add(request(1));
      if (step == 9) batch.add(request(2));
      if (step == 20) batch.add(request(3));
      batch.step();
    }
    EXPECT_EQ(batch.size(), 0u);
    EXPECT_EQ(cancelled_pieces, 5);
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(finished[i], 1) << "prompt " << i;
      EXPECT_EQ(done[i].text, alone[i].text) << "prompt " << i;
      EXPECT_EQ(done[i].tokens, alone[i].tokens) << "prompt " << i;
      EXPECT_EQ(streamed[i], done[i].text) << "prompt " << i;
      EXPECT_EQ(done[i].finish_reason, alone[i].finish_reason) << "prompt " << i;
      EXPECT_NEAR(done[i].logprob, alone[i].logprob, 1e-3) << "prompt " << i;
      EXPECT_EQ(done[i].prompt_tokens, g.count_tokens(prompts[i]));
    }
    // Bad requests are errors, and leave the batch as it was.
    GenerationRequest beam = request(0);
    beam.options.beam_size = 2;
    EXPECT_THROW(batch.add(beam), Error);
    GenerationRequest empty = request(0);
    empty.prompt = "";
    EXPECT_THROW(batch.add(empty), Error);
    GenerationRequest too_long = request(0);
    too_long.prompt = std::string(100, 'a');
    too_long.truncate_prompt = false;
    EXPECT_THROW(batch.add(too_long), Error);
    EXPECT_EQ(batch.size(), 0u);
    too_long.truncate_prompt = true;
    too_long.options.max_new_tokens = 2;
    batch.add(too_long);
    while (batch.size() > 0) batch.step();
    ASSERT_EQ(done[0].warnings.size(), 1u);
    EXPECT_NE(done[0].warnings[0].find("keeping its last 32"), std::string::npos) << done[0].warnings[0];
    EXPECT_EQ(done[0].prompt_tokens, 32);
    at::set_num_threads(threads);
  }
}

// run(): a loop per shard, fed between its steps. Rows fed while others decode give the text
// each prompt gives alone; never more than max_rows decode at once; the loops end when the
// feed says so; an exception in one loop ends them all and comes out of run().
TEST_F(Library, GenerationBatchRunFeedsEachShardOnItsOwnLoop) {
  const Generator g(gpt());
  const std::vector<std::string> prompts = {"the cat", "a dog ran in the", "w", "the cat sat on the mat. we sing",
                                            "we", "a cat and a dog"};
  GenerationOptions o;
  o.greedy = true;
  o.max_new_tokens = 40;  // past the 32 positions
  std::vector<Generation> alone;
  for (const auto& p : prompts) alone.push_back(g.generate({p}, o)[0]);

  const int threads = at::get_num_threads();
  for (auto [shards, max_rows] : {std::pair{1, 3}, std::pair{2, 3}, std::pair{2, 1}}) {
    SCOPED_TRACE(cat(shards, " shard(s), max_rows ", max_rows));
    at::set_num_threads(shards);
    GenerationBatch batch(g);
    std::mutex mutex;
    size_t next = 0, feeds = 0, in_flight = 0, most = 0;
    std::vector<Generation> done(prompts.size());
    std::vector<std::string> streamed(prompts.size());
    batch.run(static_cast<size_t>(max_rows), [&](size_t rows, size_t room, bool, const auto& add) {
      std::lock_guard<std::mutex> lock(mutex);
      // One prompt every few calls, so that rows join others that are decoding.
      const bool adding = ++feeds % 5 == 0 && room > 0 && next < prompts.size();
      if (adding && room > 0 && next < prompts.size()) {
        const size_t i = next++;
        GenerationRequest r;
        r.prompt = prompts[i];
        r.options = o;
        r.on_text = [&, i](const std::string& piece) {
          std::lock_guard<std::mutex> l(mutex);
          return streamed[i] += piece, true;
        };
        r.on_done = [&, i](Generation gen) {
          std::lock_guard<std::mutex> l(mutex);
          done[i] = std::move(gen), --in_flight;
        };
        add(std::move(r));
        most = std::max(most, ++in_flight);
      }
      return next < prompts.size() || rows > 0 || adding;  // false: this loop ends
    });
    EXPECT_EQ(next, prompts.size());
    EXPECT_EQ(in_flight, 0u);
    EXPECT_LE(most, static_cast<size_t>(max_rows));
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(done[i].tokens, alone[i].tokens) << "prompt " << i;
      EXPECT_EQ(streamed[i], alone[i].text) << "prompt " << i;
      EXPECT_NEAR(done[i].logprob, alone[i].logprob, 1e-3) << "prompt " << i;
    }
    // A loop that throws ends every loop; run() rethrows.
    std::atomic<int> calls{0};
    EXPECT_THROW(batch.run(4,
                           [&](size_t, size_t, bool, const auto&) -> bool {
                             if (++calls == 20) throw Error("fed badly");
                             return true;
                           }),
                 Error);
  }
  at::set_num_threads(threads);
}

// On a CPU with two threads the batches run side by side (run_side_by_side): the same
// translations, scores and attention as one thread running them in turn.
TEST_F(Library, TranslatorBatchesSideBySideGiveTheSameTranslations) {
  const Translator t(mt());
  TranslationOptions o;
  o.beam_size = 2;
  o.batch_size = 2;
  o.return_attention = true;
  const std::vector<std::string> sources = {"三只红猫。", "四只黄猫。", "红猫。", "三只黄猫和四只红猫。", "猫。",
                                            "四只猫。", "黄猫和红猫。"};
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const auto one = t.translate(sources, o);
  at::set_num_threads(2);
  const auto two = t.translate(sources, o);
  at::set_num_threads(threads);
  ASSERT_EQ(one.size(), sources.size());
  ASSERT_EQ(two.size(), sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    EXPECT_EQ(two[i].text, one[i].text) << i;
    EXPECT_NEAR(two[i].score, one[i].score, 1e-5) << i;
    EXPECT_EQ(two[i].attention, one[i].attention) << i;
  }
}

TEST_F(Library, TranslatorGivesTheCommandLinesTranslations) {
  const Translator t(mt());
  TranslationOptions o;
  o.beam_size = 2;
  o.return_attention = true;
  const std::vector<std::string> sources = {"三只红猫。", "", "四只黄猫。"};
  const auto out = t.translate(sources, o);
  ASSERT_EQ(out.size(), 3u);
  test::write_file(*dir_ / "mt-in.txt", "三只红猫。\n\n四只黄猫。\n");
  const auto cli = test::run(std::string(ZOO_BINARY) + " translate --beam 2 --checkpoint " + mt() + " < " +
                             (*dir_ / "mt-in.txt") + " 2>/dev/null");
  ASSERT_EQ(cli.exit_code, 0) << cli.output;
  EXPECT_EQ(cli.output, out[0].text + "\n\n" + out[2].text + "\n");
  EXPECT_TRUE(out[1].text.empty());
  ASSERT_FALSE(out[0].attention.empty());
  EXPECT_EQ(out[0].attention.size(), out[0].target_tokens.size());
  EXPECT_EQ(out[0].attention[0].size(), out[0].source_tokens.size());
  // A source longer than the model's 32 positions: an error naming the limit, or cut.
  std::string chinese;
  for (int i = 0; i < 40; ++i) chinese += "红";
  EXPECT_THROW(t.translate({chinese}), Error);
  o.truncate = true;
  EXPECT_EQ(t.translate({chinese}, o).size(), 1u);
  EXPECT_TRUE(t.translate({}).empty());
  o.beam_size = 0;
  try {
    t.translate({"三只红猫。"}, o);
    ADD_FAILURE() << "beam_size 0 was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("beam_size"), std::string::npos) << e.what();
  }
}

TEST_F(Library, EightThreadsGiveTheSingleThreadResults) {
  const Generator g(gpt());
  GenerationOptions o;
  o.greedy = true;
  o.max_new_tokens = 16;
  const std::vector<std::string> prompts = {"the cat", "we sing", "a dog"};
  const auto one = g.generate(prompts, o);
  const Classifier images(vit()), texts(bert());
  fs::path image = fs::path(*dir_ / "img.pgm");
  std::string pixels(64, static_cast<char>(40));
  for (int x = 0; x < 8; ++x) pixels[static_cast<size_t>(8 + x)] = static_cast<char>(220);
  test::write_file(image.string(), "P5\n8 8\n255\n" + pixels);
  const auto image_one = images.classify_images({image.string()}, 2);
  const std::vector<std::string> reviews = {test::review(300, true), test::review(301, false)};
  const auto text_one = texts.classify_texts(reviews, 2);
  const Encoder encoder(bert());
  const torch::Tensor embed_one = encoder.embed(reviews);
  const Translator translator(mt());
  const std::vector<std::string> sources = {"三只红猫。", "四只黄猫。"};
  const auto translated_one = translator.translate(sources);
  std::vector<std::string> failures(8);
  on_eight_threads([&](int i) {
    try {
      for (int round = 0; round < 3; ++round) {
        const auto gen = g.generate(prompts, o);
        for (size_t p = 0; p < prompts.size(); ++p)
          if (gen[p].text != one[p].text) failures[i] += "generation differs; ";
        if (images.classify_images({image.string()}, 2)[0][0].probability != image_one[0][0].probability)
          failures[i] += "image classification differs; ";
        if (texts.classify_texts(reviews, 2)[1][0].probability != text_one[1][0].probability)
          failures[i] += "text classification differs; ";
        if (!torch::allclose(encoder.embed(reviews), embed_one, 0, 0)) failures[i] += "embeddings differ; ";
        const auto translated = translator.translate(sources);
        for (size_t k = 0; k < sources.size(); ++k)
          if (translated[k].text != translated_one[k].text || translated[k].score != translated_one[k].score)
            failures[i] += "translation differs; ";
      }
    } catch (const std::exception& e) {
      failures[i] += e.what();
    }
  });
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(failures[i].empty()) << "thread " << i << ": " << failures[i];
}

TEST_F(Library, ClassifierAndEncoderAnswerForEachInput) {
  const Classifier texts(bert());
  EXPECT_EQ(texts.kind(), "text");
  const auto labels = texts.classify_texts({test::review(400, true), test::review(401, false)}, 2);
  ASSERT_EQ(labels.size(), 2u);
  ASSERT_EQ(labels[0].size(), 2u);
  EXPECT_NEAR(labels[0][0].probability + labels[0][1].probability, 1.0, 1e-5);
  EXPECT_GE(labels[0][0].probability, labels[0][1].probability);
  EXPECT_TRUE(texts.classify_texts({}, 1).empty());
  // The image classifier reads files and their bytes alike.
  const Classifier images(vit());
  EXPECT_EQ(images.kind(), "image");
  std::string pixels(64, static_cast<char>(30));
  test::write_file(*dir_ / "band.pgm", "P5\n8 8\n255\n" + pixels);
  const auto from_file = images.classify_images({*dir_ / "band.pgm"}, 1);
  const auto from_bytes = images.classify_image_bytes({test::read_file(*dir_ / "band.pgm")}, 1);
  EXPECT_EQ(from_file[0][0].name, from_bytes[0][0].name);
  EXPECT_EQ(from_file[0][0].probability, from_bytes[0][0].probability);
  // Embeddings: one row per text, the padding of a shorter text left out of its mean.
  const Encoder encoder(bert());
  const std::string shorter = "the film was great.", longer = test::review(402, false) + " " + test::review(403, true);
  const torch::Tensor both = encoder.embed({shorter, longer}), alone = encoder.embed({shorter});
  ASSERT_EQ(both.dim(), 2);
  EXPECT_EQ(both.size(0), 2);
  EXPECT_EQ(both.size(1), 32);
  EXPECT_TRUE(torch::allclose(both[0], alone[0], 1e-5, 1e-5)) << "padding changed the mean";
  EXPECT_EQ(encoder.embed({shorter}, Pooling::Cls).size(1), 32);
  EXPECT_EQ(encoder.embed({}).size(0), 0);
}

// Each failure is a zoo::Error naming what is wrong; nothing aborts.
TEST_F(Library, BadInputIsAZooErrorNamingIt) {
  const auto message = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { Generator g(*dir_ / "nothing-here"); }).find("nothing-here"), std::string::npos);
  const std::string wrong = message([] { Generator g(vit()); });
  EXPECT_NE(wrong.find(vit()), std::string::npos) << wrong;
  EXPECT_NE(wrong.find("image_classification"), std::string::npos) << wrong;
  EXPECT_NE(message([] { Classifier c(gpt()); }).find("language_modeling"), std::string::npos);
  EXPECT_NE(message([] { Encoder e(vit()); }).find("image_classification"), std::string::npos);
  const Generator g(gpt());
  EXPECT_TRUE(g.generate({}).empty());
  EXPECT_NE(message([&] { g.generate({"the", ""}); }).find("prompt 1 is empty"), std::string::npos);
  for (const auto& [option, set] : std::vector<std::pair<std::string, std::function<void(GenerationOptions&)>>>{
           {"max_new_tokens", [](GenerationOptions& o) { o.max_new_tokens = -1; }},
           {"top_p", [](GenerationOptions& o) { o.top_p = 2; }},
           {"beam_size", [](GenerationOptions& o) { o.beam_size = 0; }},
           {"temperature", [](GenerationOptions& o) { o.temperature = 0; }}}) {
    GenerationOptions o;
    set(o);
    EXPECT_NE(message([&] { g.generate({"the"}, o); }).find(option), std::string::npos) << option;
  }
  const Classifier texts(bert());
  EXPECT_NE(message([&] { texts.classify_texts({"fine", " "}, 1); }).find("text 1 is empty"), std::string::npos);
  EXPECT_NE(message([&] { texts.classify_images({"x.png"}, 1); }).find("text classifier"), std::string::npos);
  EXPECT_NE(message([&] { texts.classify_texts({"fine"}, 0); }).find("top_k"), std::string::npos);
  // Damaged weights: the command line's refusal, as an error.
  fs::copy(gpt(), *dir_ / "damaged", fs::copy_options::recursive);
  fs::resize_file(*dir_ / "damaged/model.safetensors", 100);
  EXPECT_NE(message([] { Generator d(*dir_ / "damaged"); }).find("model.safetensors"), std::string::npos);
}

TEST_F(Library, TrainAndEvaluateAsTheCommandLineDoes) {
  std::vector<int64_t> steps;
  const std::string result = train(*dir_ / "config.json", *dir_ / "lib-run", {"train.max_steps=6", "train.save_steps=6"},
                                   [&](const TrainProgress& p) {
                                     steps.push_back(p.step);
                                     EXPECT_EQ(p.total_steps, 6);
                                   });
  const auto j = nlohmann::json::parse(result);
  EXPECT_EQ(j.at("steps"), 6);
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(fs::exists(j.at("last_checkpoint").get<std::string>()));
  const auto metrics = nlohmann::json::parse(evaluate(j.at("last_checkpoint")));
  const auto cli = test::run(std::string(ZOO_BINARY) + " eval --checkpoint " + j.at("last_checkpoint").get<std::string>() +
                             " 2>/dev/null");
  EXPECT_EQ(nlohmann::json::parse(cli.output).at("loss"), metrics.at("loss"));
  LoadOptions int8;
  int8.quantize = "int8";
  const auto quantized = nlohmann::json::parse(evaluate(j.at("last_checkpoint"), "", torch::kCPU, int8));
  const auto cli_int8 = test::run(std::string(ZOO_BINARY) + " eval --quantize int8 --checkpoint " +
                                  j.at("last_checkpoint").get<std::string>() + " 2>/dev/null");
  EXPECT_EQ(quantized.at("quantize"), "int8");
  EXPECT_EQ(nlohmann::json::parse(cli_int8.output).at("loss"), quantized.at("loss"));
  EXPECT_NE(quantized.at("loss"), metrics.at("loss"));
  // A second call into the same folder is refused, as zoo train refuses it.
  EXPECT_THROW(train(*dir_ / "config.json", *dir_ / "lib-run", {"train.max_steps=6"}), Error);
}

}  // namespace
}  // namespace zoo
