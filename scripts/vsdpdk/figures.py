"""From one back end's counts in a cell to its instructions per packet, raw and on full
bursts (scripts/vs_dpdk_instructions.py; the method section of reports/vs-dpdk-instructions.md
says the same in words).

A run under a real front end mixes three kinds of burst call: empty ones (nothing on the
ring, or no room on it), partial ones and full ones. How many of each depends on who got
the CPU when, not on the library, so the libraries are compared on what a call that moves a
full burst costs:

  raw         = T / P
  full_burst  = (T - E * N0 - E * (N1 - P / B)) / P

T  instructions inside the entry point over the loaded run (callgrind),
P  packets those calls moved,
N0 calls that moved nothing, N1 = N - N0 calls that moved something,
E  one empty call's cost: the idle run's instructions over its calls (every call empty),
B  the burst asked for (32).

The first correction takes the empty calls out. The second is the fit for partial bursts:
N1 calls moved P packets where P / B full bursts would have; each call more than that is
charged the fixed cost of a call, taken as E (the one per-call cost measured alone; a call
that moves packets also pays per-burst work an empty call skips -- used index, notify
check -- so this leaves a little per-call cost in the figure when bursts are partial,
never takes out per-packet cost). Where every call that moved packets moved B of them
(N1 = P / B) the two figures differ only by the empty calls.
"""

from __future__ import annotations

BURST = 32  # what testpmd's forwarding and vhostlab serve ask each call for


class FigureError(ValueError):
    """Counts that cannot give a figure; the message names the bad value."""


def empty_cost(idle: dict) -> float:
    """E from an idle run: {"instructions", "calls", "nonempty_calls"}. Every call of an
    idle run should find nothing; a host->guest idle run's first calls may still fill the
    front end's receive ring (the phase starts after that settles where the run allows it),
    so calls that moved packets are reported beside E and must be few."""
    calls = idle["calls"]
    if calls <= 0:
        raise FigureError(f"idle run made {calls} calls: no empty-call cost")
    return idle["instructions"] / calls


def figures(run: dict, e: float, burst: int = BURST) -> dict:
    """The figures of one loaded run {"instructions", "calls", "empty_calls", "packets"}
    with empty-call cost e (see the module's docstring)."""
    t, n, n0, p = run["instructions"], run["calls"], run["empty_calls"], run["packets"]
    if p <= 0:
        raise FigureError(f"loaded run moved {p} packets")
    if not 0 <= n0 <= n:
        raise FigureError(f"empty calls {n0} not within 0..{n} calls")
    n1 = n - n0
    if n1 <= 0 or p > n1 * burst:
        raise FigureError(f"{p} packets in {n1} calls that moved packets, burst {burst}")
    extra_calls = n1 - p / burst  # calls beyond the full bursts P packets needed
    empty_part = e * n0
    partial_part = e * extra_calls
    full = (t - empty_part - partial_part) / p
    if full <= 0:
        raise FigureError(f"full-burst figure {full:.1f} <= 0: the empty-call cost {e:.1f} "
                          f"takes out more than the run's {t} instructions")
    return {"raw": t / p, "full_burst": full, "empty_minus": (t - empty_part) / p,
            "empty_share": empty_part / t, "partial_share": partial_part / t,
            "packets_per_call": p / n1, "nonempty_calls": n1}
