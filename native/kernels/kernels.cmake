# charter's kernels and their generated nanobind bindings, for the module target that hosts them.
#
#   include(native/kernels/kernels.cmake)
#   nanobind_add_module(_native ...)
#   charter_add_kernels(_native)                    # NB_MODULE must call charter_register_kernels(m)
#
# charter_add_kernels(<target> [BINDINGS_DIR <dir>]) adds native/src/*.cpp (the C++ reference
# kernels) and <dir>/*.cpp (the bindings `charter generate` writes, default generated/bindings),
# and the include directories they need. The kernel sources are compiled with -ffp-contract=off:
# a fused multiply-add would change their bits (Note [Bit-exact reference] in native/src/kernels.hpp);
# and with -O2, after the module's -Os (nanobind's default for size): -Os leaves the fixed-lane dot
# products scalar, -O2 vectorizes them with the same operations in the same order, so the same bits
# (SmolLM2's tied head, 8 tokens x 576 x 49,152: 0.86 s -> 0.09 s, every output bit equal).
include_guard(GLOBAL)

get_filename_component(CHARTER_KERNELS_ROOT "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)

function(charter_add_kernels target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "BINDINGS_DIR" "")
  if(NOT ARG_BINDINGS_DIR)
    set(ARG_BINDINGS_DIR "${CHARTER_KERNELS_ROOT}/generated/bindings")
  endif()
  file(GLOB kernel_sources CONFIGURE_DEPENDS "${CHARTER_KERNELS_ROOT}/native/src/*.cpp")
  file(GLOB binding_sources CONFIGURE_DEPENDS "${ARG_BINDINGS_DIR}/*.cpp")
  if(NOT binding_sources)
    message(FATAL_ERROR "charter_add_kernels: no generated bindings in ${ARG_BINDINGS_DIR} (run `charter generate`)")
  endif()
  target_sources(${target} PRIVATE ${kernel_sources} ${binding_sources})
  target_include_directories(${target} PRIVATE
    "${CHARTER_KERNELS_ROOT}/native/src" "${CHARTER_KERNELS_ROOT}/native/kernels")
  target_compile_features(${target} PRIVATE cxx_std_17)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    set_source_files_properties(${kernel_sources} TARGET_DIRECTORY ${target}
      PROPERTIES COMPILE_OPTIONS "-O2;-ffp-contract=off;-fno-fast-math")
  endif()
endfunction()
