"""compare's bootstrap holds bounded memory whatever the runs (issue 37 item 10): 100,000 runs
a side at once peaked at 12 GB. Here 20,000 runs a side × 2,000 resamples — 40 million values
a side unbatched, 1.1 GiB before batching — stay under 600 MiB of RSS (190 MiB measured
alone), in a process of its own."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import numpy as np
from netfleet.analysis.compare import bootstrap_diff
rng = np.random.default_rng(1)
a, b = rng.normal(300, 12, 20_000), rng.normal(310, 12, 20_000)
lo, hi = bootstrap_diff(a.tolist(), b.tolist(), 0.95, 2_000, 3)
assert lo < 10 < hi, (lo, hi)
# VmHWM: this process's own peak (ru_maxrss would start from the forking pytest worker's RSS)
print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])
"""


def test_the_bootstrap_of_many_runs_holds_bounded_memory() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, check=True
    )
    peak_mib = int(done.stdout) / 1024
    assert peak_mib < 600, f"peak RSS {peak_mib:.0f} MiB"
