// The shared libzoo (-DBUILD_SHARED_LIBS=ON) is zoo_core's objects linked whole; a shared
// library target needs a source of its own, and this is it.
#include "zoo/zoo.h"
