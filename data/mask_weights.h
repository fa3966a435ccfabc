#pragma once
// Which words masked-language-model pretraining chooses as its targets (data.mask_weighting,
// drawn anew each batch with data.dynamic_masking): a weight per vocabulary id, and a draw of
// k distinct positions whose chances follow those weights. Uniform weights are the BERT
// paper's draw; the others spend the targets on the words that carry a review's meaning
// rather than on "the" and ".":
//   frequency   count^-1/2 over the training items (word2vec's subsampling measure)
//   label_odds  0.05 + |log odds| of the word between the two labels of the labelled texts
//               (NBSVM's ratio, Wang & Manning 2012, with 20 pseudo-counts): task-guided
//               masking (Gu et al. 2020, "Train No Evil"); the model still reads no label,
//               only which words tell the labels apart decides what it must predict
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "data/bert_examples.h"

namespace zoo::data {

/// count^-1/2 of every id over `original`'s first `tokens` entries (ids never seen weigh as
/// seen once); [CLS] [PAD] [MASK] [SEP] weigh 0, [UNK] as a word.
std::vector<float> frequency_mask_weights(const std::vector<int32_t>& original, size_t tokens, int64_t vocab_size);

/// 0.05 + |log odds| per vocabulary id from the basic_english words of `texts`, labels[i]
/// being texts[i]'s ("" = unlabelled, left out); [CLS] [PAD] [MASK] [SEP] weigh 0. Throws zoo::Error
/// unless exactly two labels occur (`where` names the data in the message).
std::vector<float> label_mask_weights(const std::vector<std::string>& texts, const std::vector<std::string>& labels,
                                      const BertVocab& vocab, const std::string& where);

/// Reorders `positions` (weights[i] belonging to positions[i]) so that its first k are k
/// distinct positions drawn without replacement, each draw's chances proportional to the
/// weights left (Efraimidis-Spirakis keys u^(1/w)); weight 0 is drawn only when nothing else is.
void weighted_choice(std::vector<int64_t>& positions, const std::vector<float>& weights, int64_t k,
                     std::mt19937_64& rng);

}  // namespace zoo::data
