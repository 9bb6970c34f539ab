"""PNG plots of the seed-claims report (matplotlib, Debian's python3-matplotlib)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def ratios(rows: list[dict], path: Path) -> Path:
    """Every measured row: our speed ratio (median, min-max range) and the published one."""
    rows = [r for r in rows if r.get("ratio")]
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(rows) + 1.6))
    ys = list(range(len(rows)))[::-1]
    for y, r in zip(ys, rows):
        q = r["ratio"]
        ax.errorbar(q["median"], y, xerr=[[q["median"] - q["lo"]], [q["hi"] - q["median"]]],
                    fmt="o", color="tab:blue", capsize=3)
        if r.get("published_ratio"):
            ax.plot(r["published_ratio"], y, "D", color="tab:red")
    ax.axvline(1.0, color="grey", lw=0.8)
    ax.set_yticks(ys)
    ax.set_yticklabels([f"{r['id']} {r['label']}" for r in rows], fontsize=8)
    ax.set_xlabel("speed of the technique / baseline (blue: ours, min-max; red: published)")
    ax.set_title("Seed claims: measured ratios")
    return _save(fig, path)


def _mpps(c: dict) -> float:
    return c["mpps"]["median"] if c.get("mpps") else 0.0


def by_size(cells: list[dict], key: str, title: str, path: Path) -> Path:
    """Mpps against packet size, one line per (layout, value of key)."""
    fig, ax = plt.subplots(figsize=(7, 4))
    groups: dict[tuple, list[dict]] = {}
    for c in cells:
        groups.setdefault((c.get("layout"), c.get(key)), []).append(c)
    for (layout, val), cs in sorted(groups.items(), key=lambda kv: str(kv[0])):
        cs.sort(key=lambda c: c["size"])
        ax.plot([c["size"] for c in cs], [_mpps(c) for c in cs], marker="o",
                label=f"{layout}, {key}={val}")
    ax.set_xlabel("packet bytes")
    ax.set_ylabel("Mpps (core alone, median)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return _save(fig, path)


def alloc(cells: list[dict], path: Path) -> Path:
    """Time per dequeue call by ring fill, burst vs available, with allocations per call."""
    fig, ax = plt.subplots(figsize=(8, 4))
    labels, x = [], 0
    for c in sorted(cells, key=lambda c: (c.get("layout"), c.get("fill"), c.get("alloc"))):
        ns = c["ns_per_call"]["median"] if c.get("ns_per_call") else 0
        color = "tab:orange" if c.get("alloc") == "burst" else "tab:green"
        ax.bar(x, ns, color=color)
        ax.text(x, ns, f"{c.get('alloc_bufs_per_call', 0):.0f}", ha="center", va="bottom",
                fontsize=7)
        labels.append(f"{c.get('layout')}\n{c.get('fill')}\n{c.get('alloc')}")
        x += 1
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("ns per dequeue call (median)")
    ax.set_title("Technique 4: allocate what is available (numbers: buffers allocated per call)")
    return _save(fig, path)


def builds(per_build: dict[str, list[dict]], path: Path) -> Path:
    """Mpps per cell for each build variant."""
    names = list(per_build)
    base = per_build[names[0]]
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / max(1, len(names))
    for i, b in enumerate(names):
        by = {c["name"]: c for c in per_build[b]}
        ax.bar([j + i * width for j in range(len(base))],
               [_mpps(by[c["name"]]) if c["name"] in by else 0 for c in base],
               width=width, label=b)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(base))])
    ax.set_xticklabels(["/".join(c["name"].split("/")[:3]) for c in base], rotation=30,
                       ha="right", fontsize=7)
    ax.set_ylabel("Mpps (core alone, median over rounds)")
    ax.set_title("Build variants: technique 5 (noinline, lto) and 2 (twopath)")
    ax.legend(fontsize=8)
    return _save(fig, path)
