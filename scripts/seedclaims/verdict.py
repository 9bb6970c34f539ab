"""Ratios between two measured bench cells and the verdict rules of reports/seed-claims.md.

Every figure is a *speed* ratio: how many times faster the technique (B) is than the
baseline (A), so > 1 is a gain and < 1 a loss whatever the unit. From times (ns per packet,
ns per call) that is time(A) / time(B).

The range of a ratio is the worst and best case over the repetitions, (A.min / B.max,
A.max / B.min) for times: a ratio whose whole range lies above 1 means every repetition of B
beat every repetition of A -- the min/max ranges of the two cells do not overlap.

The paired ratios compare repetition i of B with repetition i of A: the bench interleaves
the cells of a run (rep 1 of every cell, then rep 2, ...), so these two ran seconds apart,
under the same machine load. One preempted repetition widens the min/max range of its cell
enough to hide any effect; it spoils only one paired ratio, so the pairs are judged by a
one-sided sign test (how likely that many pairs or more on the claimed side would be if B
and A were the same), not by asking every pair to agree.

Rules (also printed in the report):
  gain expected   reproduced when the median ratio is at least 1 + MIN_EFFECT and the gain
                  is beyond the noise: the range lies above 1 (no overlap), or enough of
                  the paired ratios (at least MIN_PAIRS of them) are above 1 that a
                  one-sided sign test puts the chance at most SIGN_ALPHA (5 of 5, 6 of 6,
                  7 of 7 or 8, 8 of 9); not reproduced otherwise, saying whether the ratio went
                  the other way or stayed within the noise. Where the claim publishes a
                  figure, the measured gain must also reach SIZE_SHARE of the published
                  one: +4 % beyond the noise against a published +21 % shows the direction,
                  not the claim, and is not reproduced ("the direction, not the size").
  loss expected   the mirror image (range below 1, median at most 1 - MIN_EFFECT).
  no change       reproduced when the median ratio lies within 1 +- NO_CHANGE_BAND (a
                  difference that small is not the effect the claim is about, even if it
                  is consistent); not reproduced otherwise.
  not slower      (B must be at least as fast as A) reproduced when the median ratio is at
                  least 1 - MIN_EFFECT, or the loss stays within the noise (neither the
                  range below 1 nor the pairs slower by the sign test) and under
                  NO_CHANGE_BAND; not reproduced otherwise: A was faster.
  no figure       nothing published to compare with: the row only reports ("report").
Instruction counts (callgrind) are exact: they are reported beside the time ratio as the
noise-free second figure, and quoted in the reason when they disagree with the times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

MIN_EFFECT = 0.02      # a gain or loss smaller than 2 % is not counted as one
MIN_PAIRS = 5          # the paired sign test needs this many repetitions (2^-5 = 3 %)
SIGN_ALPHA = 0.05      # the sign test's largest chance of so many pairs on one side
NO_CHANGE_BAND = 0.05  # "no change" claims: within +-5 %
SIZE_SHARE = 0.5       # a published gain or loss: at least half of it must be measured

GAIN, LOSS, NONE, NOT_SLOWER, REPORT = "gain", "loss", "none", "not slower", "report"

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
REPORT_ONLY = "report only"
NOT_TESTED = "not tested"


@dataclass
class Stat:
    """median/min/max of one metric of one cell over its repetitions."""

    median: float
    min: float
    max: float

    @classmethod
    def of(cls, d: dict) -> "Stat":
        return cls(float(d["median"]), float(d["min"]), float(d["max"]))


@dataclass
class Ratio:
    """Speed of B relative to A: median, and the (worst, best) range over repetitions."""

    median: float
    lo: float
    hi: float
    instr: Optional[float] = None  # instructions(A) / instructions(B), > 1: B runs fewer
    paired: Optional[list] = None  # speed ratio of each repetition pair (same round)

    def paired_above(self) -> int:
        return sum(1 for p in self.paired or [] if p > 1.0)


def sign_test_p(k: int, n: int) -> float:
    """One-sided sign test: the chance of k or more of n pairs on one side when each pair
    is a fair coin (A and B the same)."""
    if not 0 <= k <= n:
        raise ValueError(f"k={k} out of 0..{n}")
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2.0 ** n


def pairs_beyond_noise(on_side: int, n: int) -> bool:
    """Do on_side of n paired ratios, on the claimed side, pass the sign test?"""
    return n >= MIN_PAIRS and sign_test_p(on_side, n) <= SIGN_ALPHA


def least_on_side(n: int) -> Optional[int]:
    """The fewest of n pairs on the claimed side that pass the sign test (None: none do)."""
    return next((k for k in range(n + 1) if pairs_beyond_noise(k, n)), None)


def speed_ratio_from_times(a: Stat, b: Stat, instr_a: Optional[float] = None,
                           instr_b: Optional[float] = None,
                           reps_a: Optional[Sequence[float]] = None,
                           reps_b: Optional[Sequence[float]] = None) -> Ratio:
    """A and B are times (lower is faster); reps_a/reps_b the per-repetition times, in
    the order they ran, when known."""
    if min(a.median, a.min, a.max, b.median, b.min, b.max) <= 0:
        raise ValueError("times must be positive")
    instr = None
    if instr_a and instr_b:
        instr = instr_a / instr_b
    paired = None
    if reps_a and reps_b and len(reps_a) == len(reps_b) and min(*reps_a, *reps_b) > 0:
        paired = [x / y for x, y in zip(reps_a, reps_b)]
    return Ratio(a.median / b.median, a.min / b.max, a.max / b.min, instr, paired)


def geomean_ratio(ratios: Sequence[Ratio]) -> Ratio:
    """One figure for several cells of the same comparison (e.g. every cell of a build)."""
    if not ratios:
        raise ValueError("no ratios")

    def gm(vals):
        return math.exp(sum(math.log(v) for v in vals) / len(vals))

    instr = [r.instr for r in ratios]
    paired = None
    if all(r.paired for r in ratios) and len({len(r.paired) for r in ratios}) == 1:
        # Round by round: the geometric mean over the cells of each round's pairs.
        paired = [gm(ps) for ps in zip(*(r.paired for r in ratios))]
    return Ratio(gm([r.median for r in ratios]), gm([r.lo for r in ratios]),
                 gm([r.hi for r in ratios]),
                 gm(instr) if all(i is not None for i in instr) else None, paired)


def verdict(expect: str, r: Ratio, published: Optional[float] = None) -> tuple[str, str]:
    """(verdict, reason) for a measured ratio under the expectation of a claim; published:
    the claim's own figure as a speed ratio, where it gives one."""
    pct = (r.median - 1.0) * 100.0
    measured = f"measured {pct:+.1f} % (x{r.median:.3f}, range {r.lo:.3f}-{r.hi:.3f}"
    if r.paired:
        measured += f", {r.paired_above()}/{len(r.paired)} pairs faster"
    measured += ")"
    instr = ""
    if r.instr is not None:
        instr = f"; instructions x{r.instr:.3f} ({(r.instr - 1) * 100:+.1f} %)"
    if expect == REPORT:
        return REPORT_ONLY, f"no published figure; {measured}{instr}"
    if expect == NONE:
        if abs(r.median - 1.0) <= NO_CHANGE_BAND:
            return REPRODUCED, f"{measured}: within +-{NO_CHANGE_BAND:.0%}{instr}"
        side = "gain" if r.median > 1 else "loss"
        return NOT_REPRODUCED, (f"{measured}: a {side} beyond +-{NO_CHANGE_BAND:.0%} where no "
                                f"change was claimed{instr}")
    if expect == NOT_SLOWER:
        n = len(r.paired or [])
        slower_beyond_noise = r.hi < 1.0 or pairs_beyond_noise(n - r.paired_above(), n)
        if r.median >= 1.0 - MIN_EFFECT:
            return REPRODUCED, f"{measured}: not slower (at least x{1 - MIN_EFFECT:.2f}){instr}"
        if not slower_beyond_noise and r.median >= 1.0 - NO_CHANGE_BAND:
            return REPRODUCED, (f"{measured}: slower, but within the noise and under "
                                f"{NO_CHANGE_BAND:.0%}{instr}")
        return NOT_REPRODUCED, f"slower: {measured}{instr}"
    if expect not in (GAIN, LOSS):
        raise ValueError(f"unknown expectation {expect!r}")
    want_up = expect == GAIN
    n = len(r.paired or [])
    on_side = r.paired_above() if want_up else n - r.paired_above()
    separated = (r.lo > 1.0 if want_up else r.hi < 1.0) or pairs_beyond_noise(on_side, n)
    big = r.median >= 1.0 + MIN_EFFECT if want_up else r.median <= 1.0 - MIN_EFFECT
    if separated and big and published is not None and (published > 1.0) == want_up:
        # The effect as a fraction (+0.21 for x1.21, +0.15 for x0.85), ours against theirs.
        ours = r.median - 1.0 if want_up else 1.0 - r.median
        theirs = published - 1.0 if want_up else 1.0 - published
        if ours < SIZE_SHARE * theirs:
            return NOT_REPRODUCED, (f"the direction, not the size: {measured} against the "
                                    f"published {(published - 1) * 100:+.0f} % (under "
                                    f"{SIZE_SHARE * 100:.0f} % of it){instr}")
    if separated and big:
        return REPRODUCED, f"{measured}{instr}"
    wrong_way = r.median < 1.0 if want_up else r.median > 1.0
    if wrong_way and (r.hi < 1.0 if want_up else r.lo > 1.0):
        why = f"the opposite: {measured}, every repetition"
    elif wrong_way:
        why = f"no {expect}: {measured}, the other way but within the noise"
    elif not separated:
        why = f"within the noise: {measured}, the min/max ranges overlap"
        if n:
            why += (f" and only {on_side} of {n} pairs go the claimed way (sign test: "
                    f"chance {sign_test_p(on_side, n):.2f}, over {SIGN_ALPHA:.2f})")
    else:
        why = f"too small: {measured}, below the {MIN_EFFECT:.0%} threshold"
    return NOT_REPRODUCED, why + instr
