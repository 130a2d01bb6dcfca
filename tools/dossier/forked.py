"""Run part of a command in a forked child on another core and take back its pickled result.

`dossier check` is CPU-bound Python: one process uses one core. A forked child starts
with everything the parent has read (cards, config) at no copying cost, runs its share of
the rules, and sends back what they found. The fork happens before the parent starts any
thread, so no lock can be held in the child by a thread it does not have.

Anything that goes wrong in the child (a crash, a signal, a result that does not unpickle)
makes `Forked.result()` return None, and the caller does that share itself: a broken child
costs time, never findings. Where fork does not exist (Windows), or the machine has one
core, or DOSSIER_JOBS=1, `worth_forking` says no and the caller runs serially.
"""

from __future__ import annotations

import os
import pickle
import sys
from typing import Callable

JOBS_ENV = "DOSSIER_JOBS"


def worth_forking(units: int, minimum: int) -> bool:
    """Whether to split: DOSSIER_JOBS=1 never, 2 (or more) always, unset when there are at
    least two usable cores and `units` (e.g. cards) reach `minimum` (a fork costs ~10 ms)."""
    if not hasattr(os, "fork"):
        return False
    wanted = os.environ.get(JOBS_ENV, "").strip()
    if wanted.isdigit():
        return int(wanted) >= 2
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return cores >= 2 and units >= minimum


class Forked:
    """A child process computing `func()`; `result()` waits for it."""

    def __init__(self, func: Callable[[], object]):
        sys.stdout.flush()  # what the parent buffered must not be written twice
        sys.stderr.flush()
        read_end, write_end = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: compute, write, and leave without the parent's exit handlers
            os.close(read_end)
            status = 1
            try:
                data = pickle.dumps(func(), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(write_end, "wb") as out:
                    out.write(data)
                status = 0
            finally:
                os._exit(status)
        os.close(write_end)
        self._read_end = read_end

    def result(self):
        """The child's return value, or None when it failed in any way."""
        with os.fdopen(self._read_end, "rb") as pipe:
            data = pipe.read()  # read before waiting: a large result fills the pipe
        _, status = os.waitpid(self.pid, 0)
        if status != 0 or not data:
            return None
        try:
            return pickle.loads(data)
        except Exception:  # noqa: BLE001 - a damaged result is a failed child
            return None
