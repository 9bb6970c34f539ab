#!/bin/sh
# check_corpus.sh GEN OUTDIR REGRESSIONS MODE TARGET=EXE...
#
# The ctest test "fuzz_corpus": generate every target's seed corpus with GEN into OUTDIR
# (emptied first), check that each TARGET's corpus is non-empty, then replay it -- and the
# named regression inputs in REGRESSIONS/TARGET/ -- through EXE. MODE is "libfuzzer" (EXE
# is a libFuzzer binary: a crash, leak or timeout fails) or "replay" (EXE is the plain
# driver of normal builds, fuzz/replay_main.c: a failed check aborts).
set -u
if [ $# -lt 5 ]; then
    echo "usage: $0 GEN OUTDIR REGRESSIONS MODE TARGET=EXE..." >&2
    exit 2
fi
gen=$1 out=$2 reg=$3 mode=$4
shift 4
rm -rf "$out" && mkdir -p "$out" || exit 2
"$gen" "$out" || { echo "FAIL: $gen could not write the seed corpora" >&2; exit 1; }
status=0
for pair in "$@"; do
    name=${pair%%=*}
    exe=${pair#*=}
    seeds=$(find "$out/$name" -type f 2>/dev/null | wc -l)
    if [ "$seeds" -eq 0 ]; then
        echo "FAIL: $name: empty seed corpus" >&2
        status=1
        continue
    fi
    dirs="$out/$name"
    regs=0
    if [ -d "$reg/$name" ]; then
        regs=$(find "$reg/$name" -type f | wc -l)
        dirs="$dirs $reg/$name"
    fi
    if [ "$mode" = libfuzzer ]; then
        mkdir -p "$out/artifacts"
        # shellcheck disable=SC2086
        find $dirs -type f | sort | xargs -r "$exe" -timeout=60 -rss_limit_mb=2048 \
            -artifact_prefix="$out/artifacts/$name-" >"$out/$name.log" 2>&1
    else
        # shellcheck disable=SC2086
        find $dirs -type f | sort | xargs -r "$exe" >"$out/$name.log" 2>&1
    fi
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "FAIL: $name: replaying $seeds seeds + $regs regression inputs (exit $rc):" >&2
        tail -n 40 "$out/$name.log" >&2
        status=1
    else
        echo "ok: $name: $seeds seeds + $regs regression inputs replayed"
    fi
done
exit $status
