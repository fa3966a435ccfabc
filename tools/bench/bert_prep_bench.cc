// zoo_bench_bert_prep: builds BERT pretraining examples (data/bert_examples.h) from the
// reviews of a CSV (review,sentiment), as tools/bench/bert_prep_doc000.py does with document
// 000's IMDBBertDataset; reading the file is timed too. Prints JSON.
//   zoo_bench_bert_prep --csv imdb.csv [--masking document|bert]
#include <chrono>
#include <iostream>

#include <CLI/CLI.hpp>

#include "data/bert_examples.h"
#include "data/reviews.h"
#include "tools/bench/bench_util.h"

int main(int argc, char** argv) {
  std::string csv, masking = "document";
  CLI::App app{"BERT example preparation benchmark"};
  app.add_option("--csv", csv)->required();
  app.add_option("--masking", masking)->check(CLI::IsMember({"document", "bert"}));
  CLI11_PARSE(app, argc, argv);
  const auto t0 = std::chrono::steady_clock::now();
  zoo::data::TextReadOptions read;
  read.keep_html = true;  // as the document: its tokenizer drops "<br />" itself
  zoo::data::TextReadReport report;
  const auto rows = zoo::data::read_text_csv(csv, "review", "sentiment", read, report);
  std::vector<std::string> reviews;
  reviews.reserve(rows.size());
  for (const auto& r : rows) reviews.push_back(r.text);
  const double read_s = zoo::bench::seconds_since(t0);
  zoo::data::BertExampleOptions o;
  o.masking = masking;
  const auto ex = zoo::data::build_bert_examples(reviews, o);
  const double seconds = zoo::bench::seconds_since(t0);
  std::cout << "{\"impl\":\"zoo (C++)\",\"reviews\":" << reviews.size() << ",\"items\":" << ex.size()
            << ",\"sentence_length\":" << ex.sentence_length << ",\"vocab\":" << ex.vocab.size()
            << ",\"read_s\":" << read_s << ",\"seconds\":" << seconds << "}" << std::endl;
}
