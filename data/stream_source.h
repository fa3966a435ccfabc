#pragma once
// Where a language model's token stream lives, and when zoo builds it. With text files, the
// stream (data.stream, else OUTPUT_DIR/tokens.bin) is built where it is missing or out of
// date, but only inside the run's output directory or zoo's cache: a config, which may come
// with a downloaded checkpoint, never makes zoo write elsewhere; otherwise, and for the
// commands that have no output directory, it goes to the cache, named by its sources and
// tokenizer. Without text files an existing stream is used as it is, if the tokenizer it
// records is this one.
#include <string>
#include <vector>

#include "data/token_stream.h"
#include "data/tokenizer.h"

namespace zoo::data {

/// `files` looked up in the data home, each a regular file (not /dev/zero, a FIFO or a
/// folder); errors name `key`.
std::vector<std::string> resolved_text_files(const std::vector<std::string>& files, const std::string& key);

struct StreamRequest {
  std::vector<std::string> files;  // resolved_text_files(); empty: the stream must exist
  std::string stream;              // data.stream as given; "" = OUTPUT_DIR/tokens.bin, or the cache
  std::string output_dir;          // the training run's; "" for the other commands
  bool primary = true;             // false: another process (rank 0) builds the stream
};

/// The token stream of `request` by `tokenizer`, built first where needed (progress on stderr).
/// Errors name the stream: none and no files to build it from, another tokenizer's, or (not
/// primary) not built by rank 0 where this process looks.
TokenStream open_token_stream(const StreamRequest& request, const Tokenizer& tokenizer);

}  // namespace zoo::data
