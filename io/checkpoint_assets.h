#pragma once
// What a checkpoint directory says besides its weights: its config (zoo's or Hugging Face's)
// and the fingerprints of the tokenizer files saved with it.
#include <set>
#include <string>

#include "io/config.h"

namespace zoo {

/// Reads DIR/config.json: a zoo config, or a Hugging Face config.json (top-level
/// "model_type"), which becomes {"model": …} with default data/train sections.
json load_checkpoint_config(const std::string& dir);

/// The files of `dir` not named in `before` (the assets a task's save_assets() wrote: vocabularies,
/// tokenizer models) -> {file: FNV-1a of its bytes}, for trainer_state.json's "asset_fingerprints".
json asset_fingerprints(const std::string& dir, const std::set<std::string>& before);
/// The regular files in `dir` (names only).
std::set<std::string> file_names(const std::string& dir);
/// When DIR/trainer_state.json lists "asset_fingerprints", every listed file must still hold
/// the bytes it was saved with (a shuffled vocab.txt of the same size is not the model's);
/// without that list, DIR's tokenizer must have the fingerprint config.json records
/// (data.tokenizer_fingerprint). Throws zoo::Error naming the file and the fix. Hugging Face
/// directories record neither.
void check_asset_fingerprints(const std::string& dir);

}  // namespace zoo
