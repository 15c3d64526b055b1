"""Shared by the tests that several jobs needing one missing workload synthesize it once."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable


def slow_fake_generate(calls: list, marker: str):
    """A stand-in for ``gclsampler.synth.generate`` that takes long enough for the other jobs to
    arrive, records each call, and writes the file its caller looks for (``marker``)."""

    def generate(name, wdir, **kw):
        calls.append(name)
        time.sleep(0.3)
        Path(wdir).mkdir(parents=True, exist_ok=True)
        (Path(wdir) / marker).write_text("kernel-1.traceg\n" if marker == "kernelslist.g" else "invocation\n")
        return Path(wdir)

    return generate


def run_in_threads(job: Callable[[], object], n: int = 3) -> list:
    """``job()`` in ``n`` threads at once (each opens its own lock file: flock excludes them)."""
    got: list = []
    threads = [threading.Thread(target=lambda: got.append(job())) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got
