"""How every benchmark reports: a ratio from alternating pairs, absolute times from repeated tries.

Noise moves single figures by 20-40 % on a 2-core machine, so a ratio is taken per pair (ours and
the baseline, alternating, in one process) and reported as the median and the worst pair; a time
as the median with its min and max. A target is met when the median meets it in two separate runs:
each run says whether it did, the README keeps both runs.

Which side runs first alternates from pair to pair (ours then baseline, baseline then ours, ...): the
first of two back-to-back Spark jobs is the slower one more often (measured: with ours always first,
ours had 4 of 13 slow jobs and the baseline none; with the baseline first, the reverse), so a fixed
order would charge the noise to one side. A warm-up pair runs first and is printed, not counted: the
first run of a query warms the JVM's code for both sides, and only the side that happens to go first
pays for it.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable


def load_average() -> str:
    """The machine's load when a figure was taken: a figure measured on a busy machine says so."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs"


def verdict(median: float, target: float) -> str:
    return f"median meets the target (<= {target})" if median <= target else f"MISSES the target (<= {target})"


def ratios(ours: list[float], baseline: list[float]) -> str:
    """Per-pair ratios ours/baseline of times taken in alternation: their median and worst."""
    each = [mine / theirs for mine, theirs in zip(ours, baseline, strict=True)]
    return f"ratio median {statistics.median(each):.2f}x, worst {max(each):.2f}x over {len(each)} pairs"


def paired_ratio(name: str, ours: Callable[[], float], baseline: Callable[[], float], pairs: int,
                 target: float | None, *, warmup: int = 1) -> float:
    """`warmup` uncounted pairs, then `pairs` pairs of ours and the baseline, which one first alternating;
    prints every pair's ratio, their median and worst (and the verdict against `target`; None: a figure
    with no target yet)."""
    for _ in range(warmup):
        first, second = ours(), baseline()
        print(f"  warm-up pair (not counted): ours {first:.2f} s, baseline {second:.2f} s")
    ratios, mine, theirs = [], [], []
    for index in range(pairs):
        if index % 2 == 0:
            mine.append(ours())
            theirs.append(baseline())
        else:
            theirs.append(baseline())
            mine.append(ours())
        ratios.append(mine[-1] / theirs[-1])
    median = statistics.median(ratios)
    print("  pairs (ours / baseline, ours first in pairs 1, 3, ...): "
          + ", ".join(f"{m:.2f}/{t:.2f}" for m, t in zip(mine, theirs, strict=True)))
    print(f"{name}: ratio median {median:.2f}x, worst {max(ratios):.2f}x over {pairs} pairs "
          f"(ours median {statistics.median(mine):.2f} s, baseline median {statistics.median(theirs):.2f} s)"
          + (f"; {verdict(median, target)}" if target is not None else "; no target set"))
    return median


def repeated_time(name: str, action: Callable[[], float], tries: int, target: float | None = None) -> float:
    """`tries` timings of `action` (it returns its own seconds); prints median, min and max."""
    times = [action() for _ in range(tries)]
    median = statistics.median(times)
    aim = f"; {verdict(median, target)}" if target is not None else ""
    print(f"{name}: median {median:.1f} s (min {min(times):.1f}, max {max(times):.1f}) over {tries} tries{aim}")
    return median
