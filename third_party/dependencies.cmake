# Dependency resolution. For each dependency: the system package first (Debian
# names below); with -DZOO_FETCH_DEPS=ON a pinned upstream release is fetched for
# the header-only / source libraries when the system one is missing. Nothing from
# other projects is copied into this repository.
include(FetchContent)
option(ZOO_FETCH_DEPS "Fetch pinned releases of missing source dependencies (needs internet)" OFF)

function(zoo_missing what debian_pkg hint)
  message(FATAL_ERROR
    "zoo: ${what} not found.\n"
    "  Debian/Ubuntu: sudo apt-get install ${debian_pkg}   (or run tools/setup.sh)\n"
    "  ${hint}")
endfunction()

# --- LibTorch ---------------------------------------------------------------
# Any LibTorch works: Debian's libtorch-dev (1.13, CPU), the official 2.x zip, pip's
# torch (CMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')),
# CUDA or macOS/MPS builds. Point CMake at it with CMAKE_PREFIX_PATH or Torch_DIR.
find_package(Torch QUIET)
if(NOT Torch_FOUND)
  zoo_missing("LibTorch (TorchConfig.cmake)" "libtorch-dev"
    "Other LibTorch builds: pass -DCMAKE_PREFIX_PATH=/path/to/libtorch or -DTorch_DIR=.../share/cmake/Torch")
endif()
message(STATUS "zoo: LibTorch ${Torch_VERSION} from ${Torch_DIR}")
if(TORCH_CUDA_LIBRARIES)
  set(ZOO_WITH_CUDA 1)
  message(STATUS "zoo: this LibTorch has CUDA")
else()
  set(ZOO_WITH_CUDA 0)
endif()

# at::parallel_for is a header template: with LibTorch's OpenMP backend it runs in parallel
# only in translation units compiled with OpenMP, and serially (silently) elsewhere. zoo's
# own parallel code (CPU attention, per-core batch slices) needs it, so compile with the
# OpenMP that LibTorch uses. (The native and TBB backends need nothing.)
set(ZOO_OPENMP OFF)
foreach(_dir ${TORCH_INCLUDE_DIRS})
  if(EXISTS "${_dir}/ATen/Config.h")
    file(STRINGS "${_dir}/ATen/Config.h" _zoo_at_omp REGEX "define AT_PARALLEL_OPENMP 1")
    if(_zoo_at_omp)
      set(ZOO_OPENMP ON)
    endif()
    break()
  endif()
endforeach()
if(ZOO_OPENMP)
  find_package(OpenMP COMPONENTS CXX)
  if(NOT OpenMP_CXX_FOUND)
    message(WARNING "zoo: this LibTorch parallelises with OpenMP but the compiler has no OpenMP: "
      "zoo's own parallel loops (CPU attention, per-core batch slices) will run on one core. "
      "Debian: apt-get install libgomp1 (GCC) or libomp-dev (Clang).")
    set(ZOO_OPENMP OFF)
  endif()
endif()
message(STATUS "zoo: OpenMP for at::parallel_for: ${ZOO_OPENMP}")

# --- nlohmann_json ------------------------------------------------------------
find_package(nlohmann_json 3.9 QUIET)
if(NOT nlohmann_json_FOUND)
  if(ZOO_FETCH_DEPS)
    FetchContent_Declare(nlohmann_json URL
      https://github.com/nlohmann/json/releases/download/v3.11.2/json.tar.xz
      URL_HASH SHA256=8c4b26bf4b422252e13f332bc5e388ec0ab5c3443d24399acb675e68278d341f)
    FetchContent_MakeAvailable(nlohmann_json)
  else()
    zoo_missing("nlohmann_json" "nlohmann-json3-dev" "Or configure with -DZOO_FETCH_DEPS=ON.")
  endif()
endif()

# --- CLI11 --------------------------------------------------------------------
find_package(CLI11 2.0 QUIET)
if(NOT CLI11_FOUND)
  if(ZOO_FETCH_DEPS)
    FetchContent_Declare(cli11 GIT_REPOSITORY https://github.com/CLIUtils/CLI11 GIT_TAG v2.3.2)
    FetchContent_MakeAvailable(cli11)
  else()
    zoo_missing("CLI11" "libcli11-dev" "Or configure with -DZOO_FETCH_DEPS=ON.")
  endif()
endif()

# --- SentencePiece (tokenizers of the text models) -----------------------------
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(SENTENCEPIECE QUIET IMPORTED_TARGET sentencepiece)
endif()
if(NOT SENTENCEPIECE_FOUND)
  find_path(SENTENCEPIECE_INCLUDE_DIR sentencepiece_processor.h)
  find_library(SENTENCEPIECE_LIBRARY sentencepiece)
  find_library(SENTENCEPIECE_TRAIN_LIBRARY sentencepiece_train)
  if(NOT SENTENCEPIECE_INCLUDE_DIR OR NOT SENTENCEPIECE_LIBRARY OR NOT SENTENCEPIECE_TRAIN_LIBRARY)
    zoo_missing("SentencePiece" "libsentencepiece-dev" "Or install SentencePiece and add its prefix to CMAKE_PREFIX_PATH.")
  endif()
  add_library(PkgConfig::SENTENCEPIECE UNKNOWN IMPORTED)
  set_target_properties(PkgConfig::SENTENCEPIECE PROPERTIES
    IMPORTED_LOCATION ${SENTENCEPIECE_LIBRARY}
    INTERFACE_LINK_LIBRARIES ${SENTENCEPIECE_TRAIN_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${SENTENCEPIECE_INCLUDE_DIR})
endif()

# --- cpp-httplib (zoo serve) ------------------------------------------------------
if(PkgConfig_FOUND)
  pkg_check_modules(HTTPLIB QUIET IMPORTED_TARGET cpp-httplib)
endif()
if(HTTPLIB_FOUND)
  add_library(zoo::httplib ALIAS PkgConfig::HTTPLIB)
elseif(ZOO_FETCH_DEPS)
  FetchContent_Declare(httplib GIT_REPOSITORY https://github.com/yhirose/cpp-httplib GIT_TAG v0.11.4)
  FetchContent_MakeAvailable(httplib)
  add_library(zoo::httplib ALIAS httplib)
else()
  zoo_missing("cpp-httplib" "libcpp-httplib-dev" "Or configure with -DZOO_FETCH_DEPS=ON.")
endif()

find_package(Threads REQUIRED)

# --- zlib (gzip'd IDX files) ----------------------------------------------------
find_package(ZLIB QUIET)
if(NOT ZLIB_FOUND)
  zoo_missing("zlib" "zlib1g-dev" "")
endif()

# --- ICU (Unicode normalisation of the text data: NFD, combining marks) -----------
find_package(ICU COMPONENTS uc i18n QUIET)
if(NOT ICU_FOUND)
  zoo_missing("ICU" "libicu-dev" "")
endif()

# --- stb_image (PNG/JPEG/PGM decoding for `zoo classify`) -----------------------
find_path(STB_INCLUDE_DIR stb_image.h PATH_SUFFIXES stb)
if(NOT STB_INCLUDE_DIR)
  if(ZOO_FETCH_DEPS)
    FetchContent_Declare(stb GIT_REPOSITORY https://github.com/nothings/stb
      GIT_TAG 5736b15f7ea0ffb08dd38af21067c314d6a3aae9)
    FetchContent_MakeAvailable(stb)
    set(STB_INCLUDE_DIR ${stb_SOURCE_DIR})
  else()
    zoo_missing("stb_image.h" "libstb-dev" "Or configure with -DZOO_FETCH_DEPS=ON.")
  endif()
endif()

# --- c10d (data-parallel training: train/distributed.cc) -------------------------
# LibTorch's own distributed engine. Its Gloo process group needs the gloo headers (Debian:
# libgloo-dev; pip's torch ships them), NCCL's needs a CUDA LibTorch and nccl.h. Without
# them zoo builds and trains on one process, and refuses a distributed launch with the reason.
set(ZOO_WITH_GLOO 0)
set(ZOO_WITH_NCCL 0)
# The two backends are found apart: pip's torch ships c10d's headers but not gloo's, so a CUDA
# build there has NCCL without Gloo.
find_path(ZOO_C10D_DIR torch/csrc/distributed/c10d/TCPStore.hpp HINTS ${TORCH_INCLUDE_DIRS})
find_path(ZOO_GLOO_INCLUDE_DIR gloo/algorithm.h HINTS ${TORCH_INCLUDE_DIRS})
if(ZOO_C10D_DIR AND ZOO_GLOO_INCLUDE_DIR
   AND EXISTS "${ZOO_C10D_DIR}/torch/csrc/distributed/c10d/ProcessGroupGloo.hpp")
  set(ZOO_WITH_GLOO 1)
  find_library(ZOO_GLOO_LIBRARY gloo)
endif()
option(ZOO_NCCL "c10d's NCCL backend where a CUDA LibTorch has it" ON)
if(ZOO_C10D_DIR AND ZOO_WITH_CUDA AND ZOO_NCCL)
  # pip's torch takes nccl.h from the nvidia-nccl wheel beside it (site-packages/nvidia/...).
  find_path(ZOO_NCCL_INCLUDE_DIR nccl.h HINTS ${TORCH_INCLUDE_DIRS} ${CUDAToolkit_INCLUDE_DIRS}
            "${TORCH_INSTALL_PREFIX}/../nvidia/nccl/include" "${TORCH_INSTALL_PREFIX}/../nvidia/cu13/include"
            "${TORCH_INSTALL_PREFIX}/../nvidia/cu12/include")
  if(ZOO_NCCL_INCLUDE_DIR AND EXISTS "${ZOO_C10D_DIR}/torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp")
    set(ZOO_WITH_NCCL 1)
    # c10d's NCCL headers call NCCL inline: link it by name (the wheel has only libnccl.so.2).
    find_library(ZOO_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS "${ZOO_NCCL_INCLUDE_DIR}/../lib")
  endif()
endif()
set(_c10d_why "")
if(NOT ZOO_C10D_DIR)
  set(_c10d_why " (no torch/csrc/distributed/c10d/TCPStore.hpp in LibTorch's include path)")
elseif(NOT ZOO_WITH_GLOO)
  set(_c10d_why " (Gloo: no gloo/algorithm.h: install libgloo-dev, or pass its prefix in CMAKE_PREFIX_PATH)")
endif()
if(ZOO_WITH_CUDA AND NOT ZOO_WITH_NCCL)
  set(_c10d_why "${_c10d_why} (NCCL: no nccl.h found, or no ProcessGroupNCCL.hpp)")
endif()
message(STATUS "zoo: c10d Gloo: ${ZOO_WITH_GLOO}, NCCL: ${ZOO_WITH_NCCL}${_c10d_why}")

# --- oneDNN, for int8 products (optional) --------------------------------------
# LibTorch 1.13's quantized::linear_dynamic on its oneDNN engine builds a new input reorder for
# every call (the input's scale is a constant of it), so a decoding step's int8 products pay a
# code generation each (docs/results.md). zoo calls the same oneDNN's matmul itself, built once
# per weight, where LibTorch links oneDNN as a shared library (Debian's libtorch-dev; headers
# from libdnnl-dev): the same library, never a second copy beside one built into LibTorch.
set(ZOO_WITH_ONEDNN 0)
find_path(ZOO_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
find_library(ZOO_DNNL_LIBRARY NAMES dnnl)
find_library(_zoo_torch_cpu NAMES torch_cpu HINTS ${TORCH_INSTALL_PREFIX}/lib)
find_program(_zoo_readelf readelf)
if(ZOO_DNNL_INCLUDE_DIR AND ZOO_DNNL_LIBRARY AND _zoo_torch_cpu AND _zoo_readelf)
  execute_process(COMMAND ${_zoo_readelf} -d ${_zoo_torch_cpu} OUTPUT_VARIABLE _zoo_torch_needs ERROR_QUIET)
  if(_zoo_torch_needs MATCHES "NEEDED[^\n]*libdnnl\\.so")
    set(ZOO_WITH_ONEDNN 1)
  endif()
endif()
message(STATUS "zoo: oneDNN int8 products: ${ZOO_WITH_ONEDNN}")

# One interface target for the core library. Dependency headers are SYSTEM so that
# -Wall -Wextra report our code only.
add_library(zoo_deps INTERFACE)
add_library(zoo::deps ALIAS zoo_deps)
# pip's LibTorch 2.x exports its own copies of libstdc++ functions built by an older GCC
# (std::filesystem's remove_all, temp_directory_path, ...), which crash when code built by a
# newer GCC calls them. Naming libstdc++ before LibTorch binds those calls to the system's
# (Linux, with GCC or with Clang on libstdc++).
if(CMAKE_SYSTEM_NAME STREQUAL "Linux" AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang"
   AND NOT CMAKE_CXX_FLAGS MATCHES "-stdlib=libc\\+\\+")
  target_link_libraries(zoo_deps INTERFACE "-Wl,--push-state,--no-as-needed" stdc++ "-Wl,--pop-state")
endif()
target_link_libraries(zoo_deps INTERFACE ${TORCH_LIBRARIES} nlohmann_json::nlohmann_json
  ZLIB::ZLIB ICU::uc ICU::i18n Threads::Threads)
target_include_directories(zoo_deps SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS} $<BUILD_INTERFACE:${STB_INCLUDE_DIR}>)
target_link_libraries(zoo_deps INTERFACE ${CMAKE_DL_LIBS})
target_compile_definitions(zoo_deps INTERFACE ZOO_WITH_CUDA=${ZOO_WITH_CUDA})
if(ZOO_GLOO_LIBRARY)
  target_link_libraries(zoo_deps INTERFACE ${ZOO_GLOO_LIBRARY})
endif()
if(ZOO_WITH_ONEDNN)
  target_link_libraries(zoo_deps INTERFACE ${ZOO_DNNL_LIBRARY})
endif()
if(ZOO_WITH_NCCL)
  target_include_directories(zoo_deps SYSTEM INTERFACE ${ZOO_NCCL_INCLUDE_DIR})
  if(ZOO_NCCL_LIBRARY)
    target_link_libraries(zoo_deps INTERFACE ${ZOO_NCCL_LIBRARY})
  endif()
endif()
if(ZOO_OPENMP)
  target_link_libraries(zoo_deps INTERFACE OpenMP::OpenMP_CXX)
endif()
# Torch's exported targets carry their include dirs as non-SYSTEM; re-export as SYSTEM.
get_target_property(_torch_inc torch INTERFACE_INCLUDE_DIRECTORIES)
if(_torch_inc)
  target_include_directories(zoo_deps SYSTEM INTERFACE ${_torch_inc})
endif()

add_library(zoo_cli INTERFACE)
add_library(zoo::cli ALIAS zoo_cli)
target_link_libraries(zoo_cli INTERFACE CLI11::CLI11)

# --- GoogleTest ----------------------------------------------------------------
if(ZOO_BUILD_TESTS)
  find_package(GTest QUIET)
  if(NOT GTest_FOUND)
    if(ZOO_FETCH_DEPS)
      FetchContent_Declare(googletest GIT_REPOSITORY https://github.com/google/googletest
        GIT_TAG release-1.12.1)
      FetchContent_MakeAvailable(googletest)
      add_library(GTest::gtest_main ALIAS gtest_main)
    else()
      zoo_missing("GoogleTest" "libgtest-dev" "Or configure with -DZOO_BUILD_TESTS=OFF or -DZOO_FETCH_DEPS=ON.")
    endif()
  endif()
endif()

# --- The zoo program's allocator ---------------------------------------------------
# gperftools' tcmalloc_minimal (Debian: libtcmalloc-minimal4) where found on Linux: glibc hands
# every block over 32 MB to mmap, so each attention-score tensor of a 512-token batch comes as
# fresh pages, zeroed by the kernel, and goes back on free (a third to two fifths of the CPU
# time in system calls and page faults); tcmalloc keeps them. Only the zoo program links it
# (the benchmarks compare zoo's code with Python's on the same allocator). Figures: docs/results.md.
option(ZOO_TCMALLOC "Link the zoo program with tcmalloc_minimal where found (Linux)" ON)
add_library(zoo_allocator INTERFACE)
add_library(zoo::allocator ALIAS zoo_allocator)
if(ZOO_TCMALLOC AND CMAKE_SYSTEM_NAME STREQUAL "Linux")
  find_library(ZOO_TCMALLOC_LIBRARY NAMES tcmalloc_minimal libtcmalloc_minimal.so.4)
  if(ZOO_TCMALLOC_LIBRARY)
    # --no-as-needed: zoo calls no tcmalloc function by name; it replaces malloc and free.
    target_link_libraries(zoo_allocator INTERFACE "-Wl,--push-state,--no-as-needed" ${ZOO_TCMALLOC_LIBRARY}
                          "-Wl,--pop-state")
    message(STATUS "zoo: the zoo program allocates with ${ZOO_TCMALLOC_LIBRARY}")
  else()
    message(STATUS "zoo: the zoo program allocates with the C library's malloc (Debian: apt-get install libtcmalloc-minimal4 for tcmalloc)")
  endif()
else()
  message(STATUS "zoo: the zoo program allocates with the C library's malloc")
endif()
