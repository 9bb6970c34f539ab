# Seed corpora of the fuzz targets, in every build: the generator (gen_corpus) and the ctest
# test "fuzz_corpus" (label "fuzz") that writes every target's seed corpus into the build tree,
# checks none is empty and replays each -- with the named regression inputs of
# fuzz/regressions/<target>/ -- through the target: the libFuzzer binaries in a VL_FUZZ build,
# else plain replay drivers (fuzz/replay_main.c) built from the same target sources.
# Included from tests/CMakeLists.txt, and from fuzz/CMakeLists.txt when tests are off.

# Set in every directory that includes this file; the targets and the test below once.
set(VL_FUZZ_SRC ${CMAKE_CURRENT_LIST_DIR})
set(VL_FUZZ_TARGETS fuzz_split_dequeue fuzz_split_enqueue fuzz_packed_dequeue
    fuzz_packed_enqueue fuzz_scenario fuzz_differential fuzz_trace_parse fuzz_vhost_user
    fuzz_offload fuzz_fe_replies)
# Everything fuzz-related lands in <build>/fuzz, where fuzz/run.sh looks for it.
set(VL_FUZZ_BIN ${CMAKE_BINARY_DIR}/fuzz)
include_guard(GLOBAL)

add_executable(vl_gen_corpus ${VL_FUZZ_SRC}/gen_corpus.c ${VL_FUZZ_SRC}/gen_dp_seeds.c
  ${VL_FUZZ_SRC}/gen_dp_hostile.c ${VL_FUZZ_SRC}/gen_vu_seeds.c
  ${VL_FUZZ_SRC}/gen_offload_seeds.c ${VL_FUZZ_SRC}/gen_fe_seeds.c)
target_compile_options(vl_gen_corpus PRIVATE ${VL_WARNINGS})
target_compile_definitions(vl_gen_corpus PRIVATE _GNU_SOURCE)
target_link_libraries(vl_gen_corpus PRIVATE vl_lab_input)
# fuzz_trace_parse's seeds are text files of the source tree.
target_compile_definitions(vl_gen_corpus PRIVATE "VL_SOURCE_DIR=\"${PROJECT_SOURCE_DIR}\"")
set_target_properties(vl_gen_corpus PROPERTIES OUTPUT_NAME gen_corpus
  RUNTIME_OUTPUT_DIRECTORY ${VL_FUZZ_BIN})

set(_vl_fuzz_pairs "")
if(VL_FUZZ)
  set(_vl_fuzz_mode libfuzzer)
  foreach(t ${VL_FUZZ_TARGETS})
    list(APPEND _vl_fuzz_pairs "${t}=$<TARGET_FILE:${t}>")
  endforeach()
else()
  set(_vl_fuzz_mode replay)
  foreach(t ${VL_FUZZ_TARGETS})
    add_executable(${t}_replay ${VL_FUZZ_SRC}/${t}.c ${VL_FUZZ_SRC}/replay_main.c
      ${VL_FUZZ_SRC}/fuzz_asan_options.c)
    target_include_directories(${t}_replay PRIVATE ${VL_FUZZ_SRC})
    target_compile_options(${t}_replay PRIVATE ${VL_WARNINGS})
    target_compile_definitions(${t}_replay PRIVATE _GNU_SOURCE)
    target_link_libraries(${t}_replay PRIVATE vl_lab_input)
    # fuzz_offload calls the core's offload code below its public API (core/net/).
    target_include_directories(${t}_replay PRIVATE ${PROJECT_SOURCE_DIR}/core)
    set_target_properties(${t}_replay PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${VL_FUZZ_BIN})
    list(APPEND _vl_fuzz_pairs "${t}=$<TARGET_FILE:${t}_replay>")
  endforeach()
endif()

add_test(NAME fuzz_corpus
  COMMAND sh ${VL_FUZZ_SRC}/check_corpus.sh $<TARGET_FILE:vl_gen_corpus>
    ${VL_FUZZ_BIN}/seed-corpus ${VL_FUZZ_SRC}/regressions ${_vl_fuzz_mode} ${_vl_fuzz_pairs})
set_tests_properties(fuzz_corpus PROPERTIES LABELS fuzz TIMEOUT 900)
