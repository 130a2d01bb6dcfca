"""The server under test: wait for /health, launch it in its own process group, or start an in-process Engine."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request

from _lane import LaneError


def _refused(exc: BaseException) -> bool:
    return isinstance(getattr(exc, "reason", exc), ConnectionRefusedError)


def wait_healthy(url: str, timeout: float, proc: subprocess.Popen | None = None, log: str | None = None,
                 refused_fails: bool = False) -> None:
    """Poll GET /health until 200; fail fast if the launched process dies, or (`refused_fails`, a server
    that should already be up) when nothing listens at the port."""
    deadline = time.monotonic() + timeout
    where = f" (server log: {log})" if log else ""
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise LaneError(f"server exited with code {proc.returncode} before becoming healthy{where}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError) as exc:
            if refused_fails and _refused(exc):
                raise LaneError(f"nothing is listening at {url} (connection refused); start the server "
                                "or pass --launch") from None
        time.sleep(0.2)
    raise LaneError(f"server at {url} did not become healthy within {timeout:g}s{where}")


class Launched:
    """A server we started: its own process group, output in a log file, stopped on exit."""

    def __init__(self, argv: list[str], env: dict, url: str, timeout: float, log_dir: str, cwd: str | None = None):
        os.makedirs(log_dir, exist_ok=True)
        self.log = os.path.join(log_dir, "server.log")
        self._fh = open(self.log, "wb")
        try:
            self.proc = subprocess.Popen(argv, env={**os.environ, **env}, stdout=self._fh,
                                         stderr=subprocess.STDOUT, start_new_session=True, cwd=cwd)
        except OSError as exc:
            self._fh.close()
            raise LaneError(f"cannot start server {argv[0]!r}: {exc.strerror}") from None
        try:
            wait_healthy(url, timeout, self.proc, self.log)
        except BaseException:
            self.stop()
            raise

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self._fh.close()


class InProcessEngine:
    """An `sglang.Engine` in this process, for inputs only the Python API takes (tensors)."""

    def __init__(self, kwargs: dict):
        try:
            import sglang
        except ImportError as exc:
            raise LaneError(f"in-process mode needs sglang on this machine ({exc}); pip install sglang") from None
        try:
            self.engine = sglang.Engine(**kwargs)
        except Exception as exc:  # noqa: BLE001 - any start-up failure ends the run as one line
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise LaneError(f"sglang.Engine did not start: {type(exc).__name__}: {first}"[:300]) from None

    def stop(self):
        self.engine.shutdown()
