"""One Python subprocess that imports the lane scripts once and answers every question about them.

`dossier check` asks three things of the lanes: each script's options (its argparse parser,
for L033/L034), each registered lane's `--dry-run` (L012) and each card command's
`--dry-run` (L033). Each of them used to start its own interpreter and import the lane
helpers again (~0.2 s each, most of a cold check's subprocess time); here one interpreter
serves them all, in the order asked, over a line protocol on its stdin and stdout.

A request is one JSON line `[op, arg]`; the answer is one line, the marker then JSON, so
anything a lane script prints on its own cannot be taken for an answer. `call` returns
None when the interpreter died, answered nonsense or took longer than the timeout; it is
then stopped, the next call starts a fresh one, and the caller falls back as it did before.
"""

from __future__ import annotations

import json
import os
import secrets
import selectors
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

# The Lane class a script's __main__ runs, from the namespace runpy left (run under
# `run_name`), or None: shared by the probe and the dry-runs below.
LANE_CLASS = r"""
import sys as _sys

def lane_class(ns, run_name):
    lane_mod = _sys.modules.get("_lane")
    lanes = [v for v in ns.values() if lane_mod and isinstance(v, type) and issubclass(v, lane_mod.Lane)
             and v is not lane_mod.Lane and v.__module__ == run_name]
    # the most derived class the script defines is the one its __main__ block runs
    lanes = [c for c in lanes if not any(o is not c and issubclass(o, c) for o in lanes)]
    return lanes[-1] if lanes else None
"""

_SERVER = LANE_CLASS + r"""
import contextlib, io, json, os, runpy, sys
MARK = sys.argv[1]
base_path = list(sys.path)
# The scripts of the current folder, each run once (not as __main__) for both the option probe
# and the dry-runs: path -> its namespace, and path -> (main, Lane class) or None.
RUN_NAME = "lane_script"
namespaces, loaded, current = {}, {}, None

def enter(folder):
    # The folder's helper modules stay loaded between requests of one folder (a dry-run then
    # costs ~2 ms, not the ~60 ms of re-importing them) and are dropped for another folder,
    # whose helpers of the same name must not be served from this one.
    global namespaces, loaded, current
    if folder == current:
        return
    for name, mod in list(sys.modules.items()):
        if current and os.path.dirname(os.path.abspath(getattr(mod, "__file__", None) or "/")) == current:
            del sys.modules[name]
    sys.path[:] = base_path
    namespaces, loaded, current = {}, {}, folder

def load(script):
    # A script that failed to load is not kept: the next request tries it again and fails alike.
    if script not in namespaces:
        namespaces[script] = runpy.run_path(script, run_name=RUN_NAME)
    return namespaces[script]

def options(folder):
    # Imports each lane (run_name other than __main__, so main() does not run), finds the Lane
    # subclass the script defines, and lists its parser's options.
    enter(folder)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    import _lane, _runner
    # Where the lanes' _runner reuses parsers, the one built here serves the script's dry-runs
    # too: it is keyed by the program name, so sys.argv[0] is the script's, as in a dry-run.
    build = getattr(_runner, "reused_parser", _runner.build_parser)
    out = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py") or name.startswith("_"):
            continue
        try:
            sys.argv[0] = script = os.path.join(folder, name)
            lane = lane_class(load(script), RUN_NAME)()
            parser = build(lane)
        except Exception as exc:  # a broken lane is L011's business; say why and go on
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        opts = {}
        for action in parser._actions:
            for flag in action.option_strings:
                opts[flag] = {"takes_value": action.nargs != 0,
                              "nargs": action.nargs if isinstance(action.nargs, int) else None,
                              "choices": [str(c) for c in action.choices] if action.choices else None,
                              "type": action.type.__name__ if action.type in (int, float) else None}
        out[name] = {"options": opts}
    return out

def entry(script):
    if script not in loaded:
        ns = load(script)
        cls = lane_class(ns, RUN_NAME)
        loaded[script] = (ns["main"], cls) if cls is not None and callable(ns.get("main")) else None
    return loaded[script]

def dry_runs(jobs):
    # Each script's `main(Lane())` called per command with a fresh Lane; [exit code, stdout, stderr].
    results = []
    for script, argv in jobs:
        enter(os.path.dirname(os.path.abspath(script)))
        out, err, code = io.StringIO(), io.StringIO(), 0
        sys.argv = [script, *argv]
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                found = entry(script)
                if found is None:
                    runpy.run_path(script, run_name="__main__")
                else:
                    code = found[0](found[1](), argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if isinstance(exc.code, str):
                err.write(exc.code)
        except BaseException as exc:
            code = 1
            err.write(f"{type(exc).__name__}: {exc}")
        results.append([code if isinstance(code, int) else 0, out.getvalue(), err.getvalue()])
    return results

ops = {"options": options, "dry_runs": dry_runs}
answer = sys.stdout
for line in sys.stdin:
    op, arg = json.loads(line)
    try:
        result = ops[op](arg)
    except BaseException as exc:  # a broken lane folder: the caller falls back, as on a timeout
        result = None
    answer.write(MARK + json.dumps(result) + "\n")
    answer.flush()
"""


class LaneInterpreter:
    """The lane subprocess of one command; thread-safe (requests are answered one at a time)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._proc: subprocess.Popen | None = None
        self._mark = ""
        self._lock = threading.Lock()
        self._finalizer = None
        self._ahead: list[str] = []  # requests sent ahead, whose answers are still in the pipe
        self._answered: dict[str, bytes] = {}  # answers to requests sent ahead, read before asked for
        # What was read past the last answer: with two requests sent ahead, one read can
        # bring both answers, and the second must wait here for its call.
        self._unread = bytearray()

    def send_ahead(self, op: str, arg) -> None:
        """Send a request now, so the interpreter works on it while the caller goes on (on a
        cold check, while the cards load); the `call` with the same request takes its answer."""
        with self._lock:
            proc = self._ensure()
            request = json.dumps([op, arg])
            try:
                proc.stdin.write((request + "\n").encode())
                proc.stdin.flush()
            except OSError:
                self._broken()
                return
            self._ahead.append(request)

    def _ensure(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            self._ahead, self._answered = [], {}  # a new interpreter owes nothing
            self._unread = bytearray()
            self._mark = f"\x1edossier-{secrets.token_hex(8)}\x1e"
            self._proc = subprocess.Popen([sys.executable, "-c", _SERVER, self._mark], cwd=self.root,
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, env=child_env(os.environ))
            self._finalizer = weakref.finalize(self, _stop, self._proc)
        return self._proc

    def call(self, op: str, arg, timeout: float):
        """The answer to one request, or None (died, timed out, or answered what is not JSON)."""
        with self._lock:
            proc = self._ensure()
            request = json.dumps([op, arg])
            try:
                # Answers come in the order asked: those to requests sent ahead come first.
                while request not in self._answered and self._ahead:
                    line = _read_answer(proc, self._mark.encode(), timeout, self._unread)
                    if line is None:
                        return self._broken()
                    self._answered[self._ahead.pop(0)] = line
                line = self._answered.pop(request, None)
                if line is None:
                    proc.stdin.write((request + "\n").encode())
                    proc.stdin.flush()
                    line = _read_answer(proc, self._mark.encode(), timeout, self._unread)
                return json.loads(line) if line is not None else self._broken()
            except (OSError, ValueError):
                return self._broken()

    def _broken(self):
        _stop(self._proc)
        self._proc = None
        return None

    def close(self) -> None:
        with self._lock:
            if self._proc is not None:
                _stop(self._proc)
                self._proc = None


def ask(root: Path, interpreter: LaneInterpreter | None, op: str, arg, timeout: float):
    """`interpreter.call(...)`, or the same in a one-off interpreter when none is given (a
    caller outside `check`, which shares one per knowledge base)."""
    if interpreter is not None:
        return interpreter.call(op, arg, timeout)
    own = LaneInterpreter(root)
    try:
        return own.call(op, arg, timeout)
    finally:
        own.close()


def child_env(environ) -> dict:
    """`environ` with COLUMNS and LINES set to the terminal size the interpreter finds anyway:
    its stdout is a pipe, so `shutil.get_terminal_size` gives them when they are positive
    numbers and 80x24 otherwise. Every `add_argument` of a lane parser asks for that size
    (argparse makes a help formatter to check the metavar), and with both set it is an
    environment read instead of a failing terminal query (a third of a dry-run's time)."""
    env = dict(environ)
    for name, fallback in (("COLUMNS", 80), ("LINES", 24)):
        try:
            value = int(env.get(name, ""))
        except ValueError:
            value = 0
        env[name] = str(value if value > 0 else fallback)
    return env


def _read_answer(proc: subprocess.Popen, mark: bytes, timeout: float, unread: bytearray) -> bytes | None:
    """The next marked line on the interpreter's stdout within `timeout` seconds (without the
    marker), skipping whatever else a lane printed; None on timeout or end of output.
    `unread` holds what an earlier read brought past its answer, and keeps what this one does."""
    deadline = time.monotonic() + timeout
    fd = proc.stdout.fileno()
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            while (end := unread.find(b"\n")) >= 0:
                line = bytes(unread[:end])
                del unread[:end + 1]
                if line.startswith(mark):
                    return line[len(mark):]
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            unread += chunk


def _stop(proc: subprocess.Popen | None) -> None:
    if proc is None:
        return
    for stream in (proc.stdin, proc.stdout):
        try:
            stream.close()
        except OSError:
            pass
    if proc.poll() is None:
        proc.kill()
    proc.wait()
