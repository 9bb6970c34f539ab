"""The seeds' claims (/work/shared/design/techniques.md, items 1-5) and the bench cells that
test each one.

A *run* is one `vhostlab bench` invocation: the cells of a comparison (A, the baseline, and
B, the technique) are always in the same run, so the bench interleaves their repetitions.
A *claim* picks its A and B cells out of a run by cell parameters; every other parameter
that varies in the run (layout, size, fill, ...) makes a row of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from seedclaims.verdict import GAIN, LOSS, NONE, NOT_SLOWER, REPORT

# Bench invocations, by name: the options that choose the cells (--layout is added by the
# script: split,packed, or split alone with --quick).
RUNS = {
    "batching": ["--direction", "both", "--sizes", "64,1518", "--mergeable", "off,on",
                 "--batch", "0,256"],
    "batch_all": ["--direction", "both", "--sizes", "512,1024,1518", "--batch", "256,all"],
    "mergeable": ["--direction", "enqueue", "--sizes", "64,1518", "--mergeable", "off,on"],
    "zero_copy": ["--direction", "dequeue", "--sizes", "64,256,512,1500",
                  "--zero-copy", "off,on"],
    "alloc": ["--direction", "dequeue", "--sizes", "64", "--fill", "full,one,empty",
              "--alloc", "burst,available"],
    # Run once per build variant (techniques 2 and 5), interleaved across the builds.
    "builds": ["--direction", "dequeue,enqueue", "--sizes", "64,1518"],
}


@dataclass
class Claim:
    id: str
    technique: int
    title: str
    published: str                    # the figure as techniques.md gives it
    expect: str                       # GAIN, LOSS, NONE or REPORT (verdict.py)
    run: str                          # key of RUNS
    base: dict = field(default_factory=dict)   # cell parameters of A
    treat: dict = field(default_factory=dict)  # cell parameters of B
    where: dict = field(default_factory=dict)  # parameters both cells must have
    metric: str = "ns_per_pkt"        # the time compared (ns_per_pkt or ns_per_call)
    published_ratio: Optional[float] = None    # as a speed ratio, for the plot
    # Why the result may differ here, quoted when the claim is not reproduced.
    hint: str = ""
    # Build claims: cells run by both builds with the same code, whose ratio is quoted as
    # the noise between two builds (a control).
    control: dict = field(default_factory=dict)


CLAIMS = [
    Claim("1a", 1, "batching on (256 B) vs off, 64 B, non-mergeable",
          "+21 % packets/s at 64 B (non-mergeable)", GAIN, "batching",
          base={"batch": 0}, treat={"batch": 256}, where={"size": 64, "mergeable": False},
          published_ratio=1.21,
          hint="the lab's guest writes (TX) or posts (RX) each buffer just before the core "
               "touches it, so the copies hit L1/L2: there is little load latency for the "
               "batch to overlap, while queueing each copy costs instructions"),
    Claim("1b", 1, "batching on (256 B) vs off, 64 B, mergeable",
          "+19 % packets/s at 64 B (mergeable)", GAIN, "batching",
          base={"batch": 0}, treat={"batch": 256}, where={"size": 64, "mergeable": True},
          published_ratio=1.19,
          hint="as 1a: cache-warm buffers leave little latency to overlap"),
    Claim("1c", 1, "batching on (256 B) vs off, 1518 B",
          "no change for large packets", NONE, "batching",
          base={"batch": 0}, treat={"batch": 256}, where={"size": 1518},
          published_ratio=1.0,
          hint="1518-byte payload copies exceed the threshold and are never batched; a "
               "difference comes from the header copies or from noise"),
    Claim("1d", 1, "batch every copy vs threshold (256 B), 512-1518 B",
          "batching every copy made packets > 256 B slower", LOSS, "batch_all",
          base={"batch": 256}, treat={"batch": "all"},
          hint="one large memcpy per packet costs the same deferred or not; the deferred "
               "queue adds only a store of four words per copy"),
    Claim("2b", 2, "enqueue, mergeable on vs off (one unified path)",
          "(no figure published: what one path costs each mode)", REPORT, "mergeable",
          base={"mergeable": False}, treat={"mergeable": True}),
    Claim("3a", 3, "zero-copy vs copy dequeue, 1500 B",
          "+50 % for 1500-byte dequeue", GAIN, "zero_copy",
          base={"zero_copy": False}, treat={"zero_copy": True}, where={"size": 1500},
          published_ratio=1.5,
          hint="the copy reads a buffer the guest has just written (cache-warm) into a "
               "pool buffer reused LIFO (also warm): a 1500-byte memcpy from L1/L2 is cheap "
               "next to the lease bookkeeping zero-copy adds"),
    Claim("3b", 3, "zero-copy vs copy dequeue, 64 B",
          "-15 % at 64 B", LOSS, "zero_copy",
          base={"zero_copy": False}, treat={"zero_copy": True}, where={"size": 64},
          published_ratio=0.85,
          hint="a 64-byte copy is a couple of cache lines; the lease taken and returned per "
               "packet is the cost the claim is about"),
    Claim("3c", 3, "zero-copy vs copy dequeue, 256 B",
          "(no figure published)", REPORT, "zero_copy",
          base={"zero_copy": False}, treat={"zero_copy": True}, where={"size": 256}),
    Claim("3d", 3, "zero-copy vs copy dequeue, 512 B",
          "(no figure published)", REPORT, "zero_copy",
          base={"zero_copy": False}, treat={"zero_copy": True}, where={"size": 512}),
    Claim("4a", 4, "allocate what is available vs a whole burst, empty ring (time per call)",
          "alloc + free were 29 % of dequeue cycles (17.1 + 11.8), 3.4 % after", GAIN, "alloc",
          base={"alloc": "burst"}, treat={"alloc": "available"}, where={"fill": "empty"},
          metric="ns_per_call",
          hint="the pool is a LIFO array in cache: a bulk allocation and free of 32 heads "
               "is cheap here"),
    Claim("4b", 4, "allocate what is available vs a whole burst, 1 chain (time per call)",
          "as 4a (fewer wasted allocations per call)", GAIN, "alloc",
          base={"alloc": "burst"}, treat={"alloc": "available"}, where={"fill": "one"},
          metric="ns_per_call", hint="as 4a"),
    Claim("4c", 4, "allocate what is available vs a whole burst, full ring (time per call)",
          "no waste to remove when a whole burst is available", NONE, "alloc",
          base={"alloc": "burst"}, treat={"alloc": "available"}, where={"fill": "full"},
          metric="ns_per_call"),
]

# Techniques 2 and 5 compare builds, not cells of one run (see seed_claims.py): the same
# cells from each build directory, interleaved across builds.
BUILD_CLAIMS = [
    Claim("2a", 2, "unified receive path vs a specialised non-mergeable one "
          "(-DVL_RX_TWO_PATHS=ON), enqueue, mergeable off",
          "the unified path at least as fast as any specialised one (14.47 -> 14.87 Mpps "
          "PVP, mergeable off, against the two-path code)", NOT_SLOWER, "builds",
          base={"build": "twopath"}, treat={"build": "default"},
          where={"direction": "enqueue", "mergeable": False}, published_ratio=14.87 / 14.47,
          control={"direction": "dequeue"},
          hint="the specialised path writes packets with the same code (net/rx_fill.h) and "
               "skips only the reservation bookkeeping, which a packet that fits its first "
               "chain does not reach on the unified path either"),
    Claim("5a", 5, "no forced inline (-DVL_FORCE_INLINE=OFF) vs default build",
          "14.63 -> 10.24 Mpps I/O forwarding (-30 %) without forced inline", LOSS, "builds",
          base={"build": "default"}, treat={"build": "noinline"}, published_ratio=0.70,
          hint="the reference forced inline on a whole datapath file of large functions; "
               "here the compiler already inlines the small helpers on its own, and what "
               "forcing changes is chiefly the per-layout specialisation of the two bodies"),
    Claim("5b", 5, "LTO (-DVL_LTO=ON) vs default build",
          "(no figure: 'LTO gives the compiler the same freedom across files')", REPORT,
          "builds", base={"build": "default"}, treat={"build": "lto"}),
]

# Technique 2's other half has no bench cell: the line count of the enqueue code, with and
# without the specialised path.
LINE_COUNT_CLAIM = Claim(
    "2c", 2, "one receive path: lines of enqueue code, unified and two-path",
    "~300 fewer lines than the two-path code", REPORT, "none")

BUILD_VARIANTS = {
    "default": [],
    "noinline": ["-DVL_FORCE_INLINE=OFF"],
    "lto": ["-DVL_LTO=ON"],
    "twopath": ["-DVL_RX_TWO_PATHS=ON"],
}
