#!/bin/bash -eu
# OSS-Fuzz / ClusterFuzzLite build script (see fuzz/README.md for project.yaml and Dockerfile).
#
# Uses the variables OSS-Fuzz sets: $CC $CXX $CFLAGS $CXXFLAGS $LIB_FUZZING_ENGINE $OUT (and
# $WORK for intermediate files when set). Builds every target to $OUT/<name>, writes its seed
# corpus (gen_corpus, plus the named regression inputs of fuzz/regressions/<name>/) to
# $OUT/<name>_seed_corpus.zip, copies fuzz/<name>.dict to $OUT/<name>.dict and writes
# $OUT/<name>.options (libFuzzer's timeout and dictionary). .clusterfuzzlite/build.sh runs it.
#
# Runs outside OSS-Fuzz too, with libFuzzer defaults:
#   fuzz/build.sh                      # clang, ASan + UBSan, output in build/oss-fuzz-out
#   OUT=/tmp/out CFLAGS=... fuzz/build.sh
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
: "${CC:=clang}"
: "${CXX:=clang++}"
: "${CFLAGS:=-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fsanitize=fuzzer-no-link}"
: "${CXXFLAGS:=$CFLAGS}"
: "${LIB_FUZZING_ENGINE:=-fsanitize=fuzzer}"
: "${OUT:=$ROOT/build/oss-fuzz-out}"
BUILD_DIR="${WORK:-$ROOT/build}/vhostlab-fuzz-objs"

# Every fuzz/fuzz_*.c that defines the libFuzzer entry point is a target (the same list as
# fuzz/corpus.cmake's VL_FUZZ_TARGETS: harness/test_clusterfuzzlite.py checks they agree).
mapfile -t TARGETS < <(grep -l '^int LLVMFuzzerTestOneInput' "$ROOT"/fuzz/fuzz_*.c |
                       xargs -n1 basename | sed 's/\.c$//' | sort)

rm -rf "$BUILD_DIR"
mkdir -p "$BUILD_DIR/fuzz" "$BUILD_DIR/host" "$OUT"

# The fuzzers run on the lab build of the core, as every lab program does (core/CMakeLists.txt,
# vhostlab_lab_core): every .c under core/ (core/lab/ included: the weak no-op guest-load
# hooks and vl_lab_control, through which fuzz inputs inject pool failures), compiled with
# VL_LAB_BUILD; the code around it sees VL_LAB_BUILD too. The simulated guest is sim/*.c,
# sim/trace/*.c (the trace format, replay and recording; its replay over a socket uses
# sim/frontend/*.c, the vhost-user front end), sim/input/*.c (the targets' input
# formats and decoders) and sim/hostile_guest/*.c (the engine the datapath targets drive); where a target pulls in the
# double-fetch detector (sim/double_fetch.c), its strong hook definitions win over the weak.
mapfile -t CORE_SRCS < <(find "$ROOT/core" -name '*.c' | sort)
mapfile -t SIM_SRCS < <(find "$ROOT/sim" -maxdepth 2 -name '*.c' | sort)
CORE_FLAGS=(-std=c11 -DVL_BUILDING_CORE -DVL_LAB_BUILD -I"$ROOT/core" -I"$ROOT/core/include"
            -I"$ROOT/core/lab")
LAB_FLAGS=(-std=c11 -D_GNU_SOURCE -DVL_LAB_BUILD -I"$ROOT/sim" -I"$ROOT/sim/trace"
           -I"$ROOT/sim/input" -I"$ROOT/sim/hostile_guest" -I"$ROOT/sim/frontend"
           -I"$ROOT/core/include"
           -I"$ROOT/core/lab" -I"$ROOT/fuzz")

# compile DIR CC_AND_FLAGS... -- SOURCES...: one object per source in DIR.
compile() {
    local dir=$1
    shift
    local -a cmd=()
    while [[ $1 != -- ]]; do cmd+=("$1"); shift; done
    shift
    local src obj
    for src in "$@"; do
        obj="$dir/$(echo "${src#"$ROOT"/}" | tr / _).o"
        "${cmd[@]}" -c "$src" -o "$obj"
    done
}

# ---- the targets: core, sim and harness with the fuzzing flags ------------------------
# shellcheck disable=SC2086 # CFLAGS is a list of flags
compile "$BUILD_DIR/fuzz" $CC $CFLAGS "${CORE_FLAGS[@]}" -- "${CORE_SRCS[@]}"
# shellcheck disable=SC2086
compile "$BUILD_DIR/fuzz" $CC $CFLAGS "${LAB_FLAGS[@]}" -- "${SIM_SRCS[@]}"
ar rcs "$BUILD_DIR/libvhostlab_fuzz.a" "$BUILD_DIR"/fuzz/*.o

# Every target's ASan defaults (a smaller quarantine: fuzz/fuzz_asan_options.c).
# shellcheck disable=SC2086
$CC $CFLAGS "${LAB_FLAGS[@]}" -c "$ROOT/fuzz/fuzz_asan_options.c" -o "$BUILD_DIR/asan_options.o"
# The structure-aware mutator (fuzz/struct_mutator.h), defined by the targets that have one
# under VL_FUZZ_MUTATOR.
# shellcheck disable=SC2086
$CC $CFLAGS "${LAB_FLAGS[@]}" -c "$ROOT/fuzz/struct_mutator.c" -o "$BUILD_DIR/struct_mutator.o"
for t in "${TARGETS[@]}"; do
    # shellcheck disable=SC2086
    # -I core: fuzz_offload calls the core's offload code below its public API (core/net/).
    $CC $CFLAGS "${LAB_FLAGS[@]}" -I"$ROOT/core" -DVL_FUZZ_MUTATOR -c "$ROOT/fuzz/$t.c" \
        -o "$BUILD_DIR/$t.o"
    # shellcheck disable=SC2086 # LIB_FUZZING_ENGINE may be a flag or a library path
    $CXX $CXXFLAGS "$BUILD_DIR/$t.o" "$BUILD_DIR/asan_options.o" "$BUILD_DIR/struct_mutator.o" \
        "$BUILD_DIR/libvhostlab_fuzz.a" \
        $LIB_FUZZING_ENGINE -o "$OUT/$t"
done

# ---- seed corpora: gen_corpus, built for the build machine without fuzzing flags ------
compile "$BUILD_DIR/host" "$CC" -O1 "${CORE_FLAGS[@]}" -- "${CORE_SRCS[@]}"
compile "$BUILD_DIR/host" "$CC" -O1 "${LAB_FLAGS[@]}" -DVL_SOURCE_DIR="\"$ROOT\"" -- \
    "${SIM_SRCS[@]}" "$ROOT"/fuzz/gen_corpus.c "$ROOT"/fuzz/gen_dp_seeds.c \
    "$ROOT"/fuzz/gen_dp_hostile.c "$ROOT"/fuzz/gen_vu_seeds.c "$ROOT"/fuzz/gen_offload_seeds.c \
    "$ROOT"/fuzz/gen_fe_seeds.c
"$CC" "$BUILD_DIR"/host/*.o -o "$BUILD_DIR/gen_corpus"
"$BUILD_DIR/gen_corpus" "$BUILD_DIR/seeds"

for t in "${TARGETS[@]}"; do
    rm -f "$OUT/${t}_seed_corpus.zip"
    (cd "$BUILD_DIR/seeds/$t" && zip -q -r "$OUT/${t}_seed_corpus.zip" .)
    if [[ -d "$ROOT/fuzz/regressions/$t" ]]; then
        (cd "$ROOT/fuzz/regressions/$t" && zip -q -r "$OUT/${t}_seed_corpus.zip" .)
    fi
    # The options libFuzzer runs the target with under ClusterFuzz (as fuzz/run.sh runs it
    # here): a 10 s timeout per input and the target's dictionary.
    {
        echo "[libfuzzer]"
        echo "timeout = 10"
        if [[ -f "$ROOT/fuzz/$t.dict" ]]; then
            cp "$ROOT/fuzz/$t.dict" "$OUT/$t.dict"
            echo "dict = $t.dict"
        fi
    } > "$OUT/$t.options"
done
echo "fuzz/build.sh: ${#TARGETS[@]} targets, seed corpora, dictionaries and options in $OUT"
