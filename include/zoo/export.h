#pragma once
// ZOO_API marks what a shared libzoo exports (-DBUILD_SHARED_LIBS=ON builds it with hidden
// visibility, so everything else stays inside); nothing for the static library.
#if defined(ZOO_SHARED_BUILD) || defined(ZOO_SHARED)
#define ZOO_API __attribute__((visibility("default")))
#else
#define ZOO_API
#endif
