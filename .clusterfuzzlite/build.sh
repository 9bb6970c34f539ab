#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz entry point: the builder runs $SRC/build.sh (this file, copied
# by the Dockerfile) with $CC, $CXX, $CFLAGS, $CXXFLAGS, $LIB_FUZZING_ENGINE, $OUT and $WORK
# set for the sanitizer being built. The project's fuzz build (fuzz/build.sh) does the work:
# every target of fuzz/ to $OUT/<target>, its seed corpus (generated seeds and the committed
# regression inputs) to $OUT/<target>_seed_corpus.zip, dictionaries and options files
# beside it. ./lab test runs this file with the builder's environment (harness/
# test_clusterfuzzlite.py), where the repository is found next to it instead.
if [[ -x "${SRC:-}/vhostlab/fuzz/build.sh" ]]; then
    exec "$SRC/vhostlab/fuzz/build.sh"
fi
exec "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/fuzz/build.sh"
