// zoo::checkpoint_task: what a directory's model does, read from its config alone.
#include "zoo/zoo.h"

#include "io/inference_model.h"

namespace zoo {

std::string checkpoint_task(const std::string& dir) { return open_inference_source(dir).task(); }

}  // namespace zoo
