"""The ClusterFuzzLite project (.clusterfuzzlite/) checked the way its builder runs it.

No container can be pulled here, so the test plays OSS-Fuzz's base-builder: it runs
.clusterfuzzlite/build.sh with the environment that builder sets for an AddressSanitizer
libFuzzer build (clang, $CFLAGS with -fsanitize=address and -fsanitize=fuzzer-no-link,
$LIB_FUZZING_ENGINE=-fsanitize=fuzzer, $OUT and $WORK in a temporary folder, $SRC holding
the repository as vhostlab/), then checks what ClusterFuzzLite expects to find in $OUT and
runs every built target for a few seconds on its own seed corpus, as the builder's
check_build step and a short fuzzing run would. One test: the build takes a couple of
minutes and every check needs it.
"""

from __future__ import annotations

import configparser
import os
import re
import subprocess
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
FUZZ_SECONDS = 3

# What OSS-Fuzz's base-builder exports for `--sanitizer address --engine libfuzzer`
# (infra/base-images/base-builder: SANITIZER_FLAGS_address, COVERAGE_FLAGS, CFLAGS).
BUILDER_CFLAGS = ("-O1 -fno-omit-frame-pointer -gline-tables-only "
                  "-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -fsanitize=address "
                  "-fsanitize-address-use-after-scope -fsanitize=fuzzer-no-link")


def cmake_targets() -> list[str]:
    """The fuzz targets the CMake build knows (fuzz/corpus.cmake)."""
    text = (REPO_ROOT / "fuzz" / "corpus.cmake").read_text()
    m = re.search(r"set\(VL_FUZZ_TARGETS([^)]*)\)", text)
    assert m, "VL_FUZZ_TARGETS not found in fuzz/corpus.cmake"
    return sorted(m.group(1).split())


def test_clusterfuzzlite_build_and_run(tmp_path: Path) -> None:
    for name in ("Dockerfile", "build.sh", "project.yaml"):
        assert (REPO_ROOT / ".clusterfuzzlite" / name).is_file(), name
    assert "language: c" in (REPO_ROOT / ".clusterfuzzlite" / "project.yaml").read_text()
    for wf in ("cflite_pr.yml", "cflite_batch.yml"):
        text = (REPO_ROOT / ".github" / "workflows" / wf).read_text()
        assert "google/clusterfuzzlite/actions/build_fuzzers@v1" in text, wf
        assert "google/clusterfuzzlite/actions/run_fuzzers@v1" in text, wf
    pr = (REPO_ROOT / ".github" / "workflows" / "cflite_pr.yml").read_text()
    assert "mode: 'code-change'" in pr
    batch = (REPO_ROOT / ".github" / "workflows" / "cflite_batch.yml").read_text()
    for mode in ("batch", "prune", "coverage"):
        assert f"mode: '{mode}'" in batch, mode

    src, out, work = tmp_path / "src", tmp_path / "out", tmp_path / "work"
    for d in (src, out, work):
        d.mkdir()
    (src / "vhostlab").symlink_to(REPO_ROOT)
    env = dict(os.environ, CC="clang", CXX="clang++", CFLAGS=BUILDER_CFLAGS,
               CXXFLAGS=BUILDER_CFLAGS, LIB_FUZZING_ENGINE="-fsanitize=fuzzer",
               SANITIZER="address", FUZZING_ENGINE="libfuzzer", FUZZING_LANGUAGE="c",
               ARCHITECTURE="x86_64", SRC=str(src), OUT=str(out), WORK=str(work))
    build = subprocess.run(["bash", str(REPO_ROOT / ".clusterfuzzlite" / "build.sh")],
                           cwd=src / "vhostlab", env=env, capture_output=True, text=True,
                           timeout=1200)
    assert build.returncode == 0, f"build.sh failed:\n{build.stdout[-3000:]}\n{build.stderr[-3000:]}"

    # Every target of the CMake build, and nothing else, with its corpus and options.
    built = sorted(p.name for p in out.iterdir()
                   if p.is_file() and os.access(p, os.X_OK) and "." not in p.name)
    assert built == cmake_targets()
    for t in built:
        seeds = out / f"{t}_seed_corpus.zip"
        assert seeds.is_file(), f"{t}: no seed corpus"
        with zipfile.ZipFile(seeds) as z:
            names = [n for n in z.namelist() if not n.endswith("/")]
            assert names, f"{t}: empty seed corpus"
            corpus = tmp_path / "corpus" / t
            z.extractall(corpus)
        opts = configparser.ConfigParser()
        opts.read(out / f"{t}.options")
        assert opts.get("libfuzzer", "timeout") == "10"
        if (REPO_ROOT / "fuzz" / f"{t}.dict").is_file():
            assert opts.get("libfuzzer", "dict") == f"{t}.dict"
            assert (out / f"{t}.dict").is_file()
        # The target replays its seeds, then fuzzes briefly: no crash, no leak, exit 0.
        run = subprocess.run([str(out / t), f"-max_total_time={FUZZ_SECONDS}",
                              "-timeout=10", "-rss_limit_mb=2048", "-seed=1",
                              f"-artifact_prefix={tmp_path}/{t}-", str(corpus)],
                             cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, f"{t} failed:\n{run.stderr[-3000:]}"
        assert re.search(r"Done \d+ runs", run.stderr), f"{t}: no libFuzzer summary"
