// Where the installed package's helper programs are (<zoo/zoo.h>: ZOO_SPM_HELPER).
#include "zoo/zoo.h"

#include "data/sentencepiece_tokenizer.h"

namespace zoo::detail {

bool use_spm_helper(const char* path) {
  data::set_spm_helper(path ? path : "");
  return true;
}

}  // namespace zoo::detail
