"""How every benchmark reports: a ratio from alternating pairs, absolute times from repeated tries.

Noise moves single figures by 20-40 % on a 2-core machine, so a ratio is taken per pair (ours, then
the baseline, alternating, in one process) and reported as the median and the worst pair; a time
as the median with its min and max. A target is met when the median meets it in two separate runs:
each run says whether it did, the README keeps both runs.
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
                 target: float | None) -> float:
    """`pairs` alternating runs of each (ours first); prints the per-pair ratios' median and worst (and the
    verdict against `target`; None: a figure with no target yet)."""
    ratios, mine, theirs = [], [], []
    for _ in range(pairs):
        mine.append(ours())
        theirs.append(baseline())
        ratios.append(mine[-1] / theirs[-1])
    median = statistics.median(ratios)
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
