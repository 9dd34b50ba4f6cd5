"""``reap_own_children`` restores an inherited ``SIGCHLD = SIG_IGN`` in the main thread only
(another thread may not set a handler: left as it is), so children's return codes are real."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import signal, subprocess, threading
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
from netfleet.children import reap_own_children
worker = threading.Thread(target=reap_own_children)
worker.start()
worker.join()
print(signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN)
reap_own_children()
print(signal.getsignal(signal.SIGCHLD) == signal.SIG_DFL)
print(subprocess.run(["sh", "-c", "exit 3"], check=False).returncode)
"""


def test_an_ignored_sigchld_is_restored_by_the_main_thread() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "3"]
