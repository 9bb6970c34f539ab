#!/usr/bin/env bash
# Local fuzzing run: build (if needed), seed, replay, fuzz, report. See fuzz/README.md.
#
#   fuzz/run.sh [--seconds N] [--jobs J] [--build DIR] [--corpus DIR] [--json] [TARGET...]
#
# For each target (default: all ten): replay every input it has -- the generated seeds, the
# persistent corpus and the named regressions in fuzz/regressions/<target>/ -- where any crash
# is a failure, then fuzz for N seconds (default 60) into the persistent corpus, and print a
# table: target, executions, exec/s, corpus size (files), coverage (libFuzzer's final "cov:"),
# crashes. Exits 1 if anything crashed (crash files are kept and their paths printed), 2 on a
# usage or build error.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ALL_TARGETS=(fuzz_split_dequeue fuzz_split_enqueue fuzz_packed_dequeue fuzz_packed_enqueue
             fuzz_scenario fuzz_differential fuzz_trace_parse fuzz_vhost_user fuzz_offload
             fuzz_fe_replies)
SECONDS_PER_TARGET=60
BUILD="$ROOT/build/fuzz"
WORK="$ROOT/build/fuzz-corpus"
CRASHES="$ROOT/build/fuzz-crashes"
JSON=0
JOBS=1
TARGETS=()

usage() {
    cat <<EOF
Usage: fuzz/run.sh [--seconds N] [--jobs J] [--build DIR] [--corpus DIR] [--json] [TARGET...]

Builds the libFuzzer targets if needed (clang, -DVL_FUZZ=ON -DCMAKE_BUILD_TYPE=Asan in DIR,
default build/fuzz), writes fresh seed corpora (gen_corpus), then for each TARGET (default:
all) replays every seed, corpus and regression input (a crash fails the run) and fuzzes for
N seconds (default 60) with -timeout=10 -rss_limit_mb=2048 and the target's dictionary.

  --seconds N    fuzzing time per target (0: replay only)
  --jobs J       run J targets at once (default 1); each still fuzzes N seconds
  --build DIR    the VL_FUZZ build tree to use or create
  --corpus DIR   where corpora live (default build/fuzz-corpus): DIR/<target> is the
                 persistent corpus, DIR/seeds/<target> the seeds, DIR/logs/<target>.log the
                 libFuzzer output; crash files go to build/fuzz-crashes/<target>/
  --json         print the results as JSON on stdout instead of the table

Targets: ${ALL_TARGETS[*]}
EOF
}

die() { printf 'fuzz/run.sh: %s\n' "$*" >&2; exit 2; }
log() { printf '==> %s\n' "$*" >&2; }

while (($#)); do
    case "$1" in
        --seconds) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || die "--seconds needs a number"
                   SECONDS_PER_TARGET=$2; shift 2 ;;
        --seconds=*) SECONDS_PER_TARGET=${1#*=}
                     [[ "$SECONDS_PER_TARGET" =~ ^[0-9]+$ ]] || die "--seconds needs a number"
                     shift ;;
        --build) [[ $# -ge 2 ]] || die "--build needs a directory"; BUILD=$2; shift 2 ;;
        --build=*) BUILD=${1#*=}; shift ;;
        --corpus) [[ $# -ge 2 ]] || die "--corpus needs a directory"; WORK=$2; shift 2 ;;
        --corpus=*) WORK=${1#*=}; shift ;;
        --json) JSON=1; shift ;;
        --jobs) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || die "--jobs needs a number >= 1"
                JOBS=$2; shift 2 ;;
        --jobs=*) JOBS=${1#*=}
                  [[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || die "--jobs needs a number >= 1"
                  shift ;;
        -h|--help) usage; exit 0 ;;
        -*) usage >&2; die "unknown option $1" ;;
        *) TARGETS+=("$1"); shift ;;
    esac
done
((${#TARGETS[@]})) || TARGETS=("${ALL_TARGETS[@]}")
for t in "${TARGETS[@]}"; do
    [[ " ${ALL_TARGETS[*]} " == *" $t "* ]] || die "unknown target $t (targets: ${ALL_TARGETS[*]})"
done
BUILD="$(mkdir -p "$BUILD" && cd "$BUILD" && pwd)" || die "cannot use build directory $BUILD"
mkdir -p "$WORK" "$CRASHES" || die "cannot create $WORK"
WORK="$(cd "$WORK" && pwd)"
CRASHES="$(cd "$CRASHES" && pwd)"

# ---- build ----------------------------------------------------------------------------

if [[ -f "$BUILD/CMakeCache.txt" ]]; then
    grep -qE '^VL_FUZZ:[A-Z]*=(ON|1|TRUE|YES)$' "$BUILD/CMakeCache.txt" ||
        die "$BUILD is a build tree without VL_FUZZ=ON; pick another --build directory"
    # Configure again (cheap, cached settings kept): a target added since the tree was made
    # has no rule until then, and make asks for no reconfigure before it fails on that.
    cmake -S "$ROOT" -B "$BUILD" >/dev/null || die "configure of $BUILD failed"
else
    command -v clang >/dev/null || die "clang not found (libFuzzer needs it)"
    log "configuring $BUILD (clang, VL_FUZZ=ON, Asan)"
    cmake -S "$ROOT" -B "$BUILD" -DVL_FUZZ=ON -DCMAKE_BUILD_TYPE=Asan \
        -DCMAKE_C_COMPILER=clang >&2 || die "configure failed"
fi
log "building fuzz targets in $BUILD"
cmake --build "$BUILD" -j"$(nproc 2>/dev/null || echo 2)" --target vl_gen_corpus \
    "${TARGETS[@]}" >&2 || die "build failed"

# ---- seeds ----------------------------------------------------------------------------

rm -rf "$WORK/seeds"
"$BUILD/fuzz/gen_corpus" "$WORK/seeds" "${TARGETS[@]}" >&2 || die "gen_corpus failed"
mkdir -p "$WORK/logs"

# ---- per target -----------------------------------------------------------------------

declare -A EXECS RATE FILES COV NCRASH STATUS REPLAYED CRASHLIST
any_crash=0
RESULTS="$WORK/results"
rm -rf "$RESULTS" && mkdir -p "$RESULTS" || die "cannot create $RESULTS"

count_files() { find "$1" -type f 2>/dev/null | wc -l | tr -d ' '; }

# One target: replay, fuzz, count. It runs in a subshell when --jobs is above 1, so it hands
# its figures back through $RESULTS/<target> (sourced below), never through the arrays.
fuzz_one() {
    local t=$1 exe corpus seeds regs crashdir tlog before committed bad rc f
    local -a dict flags dirs extra
    exe="$BUILD/fuzz/$t"
    corpus="$WORK/$t"
    seeds="$WORK/seeds/$t"
    regs="$ROOT/fuzz/regressions/$t"
    crashdir="$CRASHES/$t"
    tlog="$WORK/logs/$t.log"
    mkdir -p "$corpus" "$crashdir"
    before="$(mktemp)"
    ls -1 "$crashdir" >"$before" 2>/dev/null
    dict=()
    [[ -f "$ROOT/fuzz/$t.dict" ]] && dict=(-dict="$ROOT/fuzz/$t.dict")
    flags=(-timeout=10 -rss_limit_mb=2048 -artifact_prefix="$crashdir/")
    # A fixed seed (VHOSTLAB_FUZZ_SEED) makes a gate run explore the same way every time.
    [[ -n "${VHOSTLAB_FUZZ_SEED:-}" ]] && flags+=(-seed="$VHOSTLAB_FUZZ_SEED")

    # 1. Replay everything this target has; each file runs once, by name. The committed
    # corpus (fuzz/corpus/<target>, grown by ./lab fuzz campaigns) is replayed and read.
    committed="$ROOT/fuzz/corpus/$t"
    dirs=("$seeds" "$corpus")
    [[ -d "$regs" ]] && dirs+=("$regs")
    extra=()
    [[ -d "$committed" ]] && extra=("$committed")
    dirs+=("${extra[@]}")
    REPLAYED[$t]=$(find "${dirs[@]}" -type f | wc -l | tr -d ' ')
    log "$t: replaying ${REPLAYED[$t]} inputs (seeds, corpus, regressions)"
    STATUS[$t]=ok
    if ! find "${dirs[@]}" -type f -print0 | sort -z |
            xargs -0 -r "$exe" "${flags[@]}" >"$tlog.replay" 2>&1; then
        STATUS[$t]="replay crash"
        grep -E '^fuzz: |ERROR|Running: ' "$tlog.replay" | tail -n 3 >&2
        # Replaying writes no artifact: keep a copy of the input that crashed.
        bad=$(sed -n 's/^Running: //p' "$tlog.replay" | tail -n 1)
        [[ -f "$bad" ]] && cp "$bad" "$crashdir/replay-$(basename "$bad")"
    fi

    # 2. Fuzz into the persistent corpus (new inputs land there; seeds are read too).
    EXECS[$t]=0 RATE[$t]=0 COV[$t]=0
    if [[ ${STATUS[$t]} == ok && $SECONDS_PER_TARGET -gt 0 ]]; then
        log "$t: fuzzing for ${SECONDS_PER_TARGET}s"
        "$exe" "${flags[@]}" "${dict[@]}" -max_total_time="$SECONDS_PER_TARGET" \
            -print_final_stats=1 "$corpus" "$seeds" "${extra[@]}" >"$tlog" 2>&1
        rc=$?
        EXECS[$t]=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tlog" | tail -n 1)
        RATE[$t]=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$tlog" | tail -n 1)
        if [[ -z "${EXECS[$t]}" ]]; then
            # No final stats (killed): the last status line has the count and the rate.
            EXECS[$t]=$(grep -oE '^#[0-9]+' "$tlog" | tail -n 1 | tr -d '#')
            RATE[$t]=$(grep -oE 'exec/s: [0-9]+' "$tlog" | tail -n 1 | grep -oE '[0-9]+')
        fi
        COV[$t]=$(grep -oE 'cov: [0-9]+' "$tlog" | tail -n 1 | grep -oE '[0-9]+')
        [[ $rc -eq 0 ]] || STATUS[$t]="crash (exit $rc)"
        [[ $rc -ne 0 ]] && grep -E '^fuzz: |ERROR: ' "$tlog" | head -n 3 >&2
    fi
    EXECS[$t]=${EXECS[$t]:-0} RATE[$t]=${RATE[$t]:-0} COV[$t]=${COV[$t]:-0}
    FILES[$t]=$(count_files "$corpus")
    CRASHLIST[$t]=$(ls -1 "$crashdir" 2>/dev/null | sort | comm -13 <(sort "$before") - |
                    sed "s|^|$crashdir/|" | tr '\n' ' ')
    rm -f "$before"
    NCRASH[$t]=$(wc -w <<<"${CRASHLIST[$t]}" | tr -d ' ')
    # A failed replay or run that left no file (the crash was in an input we already have)
    # still counts once.
    if [[ ${STATUS[$t]} != ok && ${NCRASH[$t]} -eq 0 ]]; then NCRASH[$t]=1; fi
    for f in EXECS RATE FILES COV NCRASH STATUS REPLAYED CRASHLIST; do
        local -n arr=$f
        printf '%s[%s]=%q\n' "$f" "$t" "${arr[$t]}"
        unset -n arr
    done >"$RESULTS/$t"
}

# Up to JOBS targets at once, each on its own core for the same fuzzing time: the figures
# per target are what a lone run gives, the wall time is divided.
running=0
for t in "${TARGETS[@]}"; do
    if ((JOBS > 1)); then
        if ((running >= JOBS)); then wait -n; running=$((running - 1)); fi
        fuzz_one "$t" &
        running=$((running + 1))
    else
        fuzz_one "$t"
    fi
done
wait
for t in "${TARGETS[@]}"; do
    [[ -f "$RESULTS/$t" ]] || die "$t left no results (see $WORK/logs/$t.log)"
    # shellcheck disable=SC1090
    source "$RESULTS/$t"
    ((NCRASH[$t] > 0)) && any_crash=1
done

# ---- report ---------------------------------------------------------------------------

total=0
for t in "${TARGETS[@]}"; do total=$((total + EXECS[$t])); done

if ((JSON)); then
    printf '{\n  "seconds_per_target": %s,\n  "build": "%s",\n  "corpus": "%s",\n' \
        "$SECONDS_PER_TARGET" "$BUILD" "$WORK"
    printf '  "targets": [\n'
    n=0
    for t in "${TARGETS[@]}"; do
        n=$((n + 1))
        files=""
        for f in ${CRASHLIST[$t]}; do files+="${files:+, }\"$f\""; done
        printf '    {"target": "%s", "executions": %s, "exec_per_sec": %s, "corpus_files": %s, ' \
            "$t" "${EXECS[$t]}" "${RATE[$t]}" "${FILES[$t]}"
        printf '"coverage": %s, "crashes": %s, "replayed": %s, "status": "%s", ' \
            "${COV[$t]}" "${NCRASH[$t]}" "${REPLAYED[$t]}" "${STATUS[$t]}"
        printf '"crash_files": [%s], "log": "%s"}%s\n' "$files" "$WORK/logs/$t.log" \
            "$([[ $n -lt ${#TARGETS[@]} ]] && echo ,)"
    done
    printf '  ],\n  "total_executions": %s,\n  "ok": %s\n}\n' "$total" \
        "$([[ $any_crash -eq 0 ]] && echo true || echo false)"
else
    fmt='%-20s %12s %8s %8s %8s %8s  %s\n'
    printf "$fmt" target executions exec/s corpus cov crashes status
    printf "$fmt" -------------------- ------------ -------- -------- -------- -------- ------
    for t in "${TARGETS[@]}"; do
        printf "$fmt" "$t" "${EXECS[$t]}" "${RATE[$t]}" "${FILES[$t]}" "${COV[$t]}" \
            "${NCRASH[$t]}" "${STATUS[$t]}"
    done
    printf "$fmt" total "$total" "" "" "" "" ""
    echo
    echo "${SECONDS_PER_TARGET}s per target; corpora in $WORK/<target>, logs in $WORK/logs/"
    if ((any_crash)); then
        echo "CRASHES -- files kept in $CRASHES/<target>/:"
        for t in "${TARGETS[@]}"; do
            for f in ${CRASHLIST[$t]}; do echo "  $f"; done
            [[ ${STATUS[$t]} == "replay crash" ]] &&
                echo "  $t: an input of its seeds, corpus or regressions crashed (copied as replay-*); see $WORK/logs/$t.log.replay"
        done
        echo "Reproduce: $BUILD/fuzz/<target> <file>; keep it as fuzz/regressions/<target>/<name>."
    fi
fi
exit $((any_crash ? 1 : 0))
