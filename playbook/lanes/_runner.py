"""The command line every lane shares: --dry-run, --launch, --server-url, the measured run, --compare.

A lane script subclasses `_lane.Lane` and ends with `sys.exit(main(MyLane()))`.

What only a measured run needs (HTTP, threads, temp folders, provenance, the result file) is
imported where it is used: a --dry-run or a parser build (what `dossier check` asks of every
lane, many times) then imports none of it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
import time

from _lane import Lane, LaneError, LaneSkip, Sample
from _workload import add_arguments as add_workload_arguments

EXIT_FAIL, EXIT_ERROR = 1, 2
EXIT_BROKEN_PIPE = 141  # what a shell reports for a process killed by SIGPIPE (128 + 13)


class _HelpWithDefaults(argparse.ArgumentDefaultsHelpFormatter):
    """Show every option's default, unless its help already says it or there is none to show."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default in (None, False, argparse.SUPPRESS) or not action.option_strings:
            return text
        return super()._get_help_string(action)


def build_parser(lane: Lane) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(lane.__doc__ or lane.name).strip().splitlines()[0],
                                formatter_class=_HelpWithDefaults)
    p.add_argument("--dry-run", action="store_true", help="Print the server command and requests; no network.")
    p.add_argument("--launch", action="store_true", help="Start the server with the lane's flags and wait for /health.")
    p.add_argument("--server-url", help="Use a running server (e.g. http://127.0.0.1:30000); a refused "
                                        "connection fails at once.")
    p.add_argument("--server-cmd", help="Override the launch command (shell words; {model} and {port} are filled); "
                                        "with --server-url, the command that started that server, for the record.")
    p.add_argument("--model", default=lane.default_model, help="Model path or HF id.")
    p.add_argument("--port", type=int, default=lane.default_port, help="Port --launch serves on.")
    p.add_argument("--requests", type=int, default=8, help="Measured requests (p99 needs 100 to mean anything).")
    p.add_argument("--concurrency", type=int, default=1, help="Measured requests in flight at once.")
    p.add_argument("--warmup", type=int, default=1, help="Unmeasured requests first.")
    p.add_argument("--timeout", type=float, default=600, help="Per-request timeout (s).")
    p.add_argument("--health-timeout", type=float, default=1200, help="How long --launch waits for /health (s).")
    p.add_argument("--max-tokens", type=int, default=64, help="max_tokens of each request.")
    p.add_argument("--gpu-memory", action="store_true",
                   help="Sample peak GPU memory (nvidia-smi) during the measured requests.")
    p.add_argument("--output", help="Write the JSON result here.")
    p.add_argument("--log-dir", default=None, help="Where --launch writes server.log (default: a temp folder).")
    p.add_argument("--lane-id", help="Registry id to label the result with (default: derived from the flags).")
    p.add_argument("--served-name", default=None, help="Model name sent in requests (default: the lane's).")
    p.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="Print the before/after table of two results.")
    add_workload_arguments(p)
    lane.add_arguments(p)
    return p


# Scalar defaults only: a parse hands each option its default object itself, so a list or dict
# default changed by one run would leak into the next run of a reused parser.
_SCALARS = (type(None), bool, int, float, str)
_PARSERS: dict[tuple, argparse.ArgumentParser] = {}


def reused_parser(lane: Lane) -> argparse.ArgumentParser:
    """`build_parser(lane)`, built once per lane class in a process that runs lanes many times
    (dossier's lane interpreter runs every card's --dry-run in one process).

    Reusing is safe: parse_args does not change a parser, and a rebuilt one would be the same,
    since build_parser reads the lane's class (an instance without attributes of its own), the
    program name argparse takes from sys.argv[0] and, in add_arguments, at most the environment,
    all three in the key. A lane with instance attributes or a non-scalar default gets a fresh one.
    """
    if vars(lane):
        return build_parser(lane)
    key = (type(lane), os.path.basename(sys.argv[0]), tuple(os.environ.items()))
    parser = _PARSERS.get(key)
    if parser is None:
        parser = build_parser(lane)
        defaults = [a.default for a in parser._actions] + list(parser._defaults.values())
        if not all(type(d) in _SCALARS for d in defaults):
            return parser
        _PARSERS[key] = parser
    return parser


def launch_argv(lane: Lane, args) -> list[str]:
    if args.server_cmd:
        try:
            words = shlex.split(args.server_cmd)
        except ValueError as exc:  # an unbalanced quote
            raise LaneError(f"--server-cmd is not shell words: {exc}") from None
        try:
            return [w.format(model=args.model, port=args.port) for w in words]
        except (KeyError, IndexError, ValueError) as exc:
            raise LaneError(f"--server-cmd: only {{model}} and {{port}} are filled, not {exc}") from None
    return lane.server_command(args)


def _server_url_problem(url: str) -> str | None:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        return f"--server-url {url!r} is not a URL"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"--server-url {url!r} is not http(s)://host:port"
    return None


def _say(msg: str) -> None:
    print(msg, flush=True)


def _fail(lane: Lane, msg: str, code: int) -> int:
    print(f"lane {lane.name}: error: {msg}", file=sys.stderr, flush=True)
    return code


def run_requests(lane: Lane, args, base: str, sampler=None) -> tuple[list[Sample], float]:
    """Warm-up requests one by one, then the measured ones at --concurrency; (samples, wall seconds).
    `sampler`: a started-here _provenance.MemorySampler, or None."""
    from concurrent.futures import ThreadPoolExecutor

    for i in range(args.warmup):
        lane.send(args, base, -1 - i)
    if sampler is not None:
        sampler.start()
    start = time.perf_counter()
    if args.concurrency == 1:  # on this thread: an in-process engine's event loop lives here
        samples = [lane.send(args, base, i) for i in range(args.requests)]
    else:
        with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
            samples = list(pool.map(lambda i: lane.send(args, base, i), range(args.requests)))
    return samples, time.perf_counter() - start


def _compare(lane: Lane, paths: list[str]) -> int:
    from _results import compare_table

    results = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as fh:
                results.append(json.load(fh))
        except (OSError, json.JSONDecodeError) as exc:
            return _fail(lane, f"cannot read result: {exc}", EXIT_ERROR)
    _say(compare_table(*results))
    return 0


def engine_line(kwargs: dict) -> str:
    return "sglang.Engine(" + ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) + ")"


def _dry_run(lane: Lane, args, argv_server: list[str] | None, env: dict, engine: dict | None) -> int:
    _say(f"lane: {lane.name} ({lane.repo})")
    if engine is not None:
        _say("engine: " + engine_line(engine))
    else:
        _say("server: " + " ".join(f"{k}={v}" for k, v in env.items()) + (" " if env else "") + shlex.join(argv_server))
    _say(f"load: {args.requests} requests, concurrency {args.concurrency}, warmup {args.warmup}")
    _say(f"media: {lane.media(args)}")
    for line in lane.plan(args):
        _say(line)
    for line in lane.describe(args):
        _say("request: " + line)
    return 0


def server_command(args, argv_server: list[str] | None, env: dict, engine: dict | None) -> str | None:
    """The exact command the measured server ran: launched here, given by --server-cmd, or the engine call."""
    if engine is not None:
        return engine_line(engine)
    if args.launch or args.server_cmd:
        return " ".join(f"{k}={v}" for k, v in env.items()) + (" " if env else "") + shlex.join(argv_server)
    return None  # a --server-url started elsewhere: pass --server-cmd to record how


def what_ran(args, base: str, argv_server, env: dict, engine: dict | None) -> dict:
    """GPU, server version and commit, server command and lane commit, for the result file."""
    from _provenance import gpu_info, lane_commit, server_info

    if engine is not None:
        try:
            import sglang

            server = {"version": getattr(sglang, "__version__", None), "commit": None, "source": "sglang.__version__"}
        except ImportError:
            server = {"version": None, "commit": None, "source": None}
    else:
        server = server_info(base)
    return {"gpu": gpu_info(), "server": {**server, "command": server_command(args, argv_server, env, engine)},
            "lane": lane_commit()}


def _measure(lane: Lane, args, argv_server: list[str] | None, env: dict, engine: dict | None) -> int:
    import tempfile
    from http.client import HTTPException

    from _provenance import MemorySampler
    from _results import print_table, summarize, write_result
    from _server import InProcessEngine, Launched, wait_healthy

    base = (args.server_url or f"http://127.0.0.1:{args.port}").rstrip("/")
    server = None
    sampler = MemorySampler() if args.gpu_memory else None
    ran: dict = {}
    workdir = tempfile.mkdtemp(prefix=f"lane-{lane.name}-")
    try:
        lane.prepare(args, workdir)  # before the launch: a missing tool should not cost a model load
        if engine is not None:  # in-process: the client-side work first, then the (slow) engine start
            _say("starting in-process " + engine_line(engine))
            server = InProcessEngine(engine)
            lane.engine = server.engine
        elif args.launch:
            _say("launching: " + shlex.join(argv_server))
            server = Launched(argv_server, env, base, args.health_timeout, args.log_dir or workdir,
                              lane.server_cwd(args))
        else:
            wait_healthy(base, min(args.health_timeout, 30), refused_fails=True)
        ran = what_ran(args, base, argv_server, env, engine)
        samples, wall = run_requests(lane, args, base, sampler)
    except (HTTPException, ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
        # A reply that is not HTTP, or JSON of the wrong shape: an error, never a measured result.
        msg = f"the server's reply is not what the lane expects: {type(exc).__name__}: {str(exc)[:160]}"
        write_result(args, lane, "error", {}, [], msg, ran)
        return _fail(lane, msg, EXIT_ERROR)
    except LaneSkip as exc:
        _say(f"lane {lane.name}: SKIPPED - {exc}")
        return 0
    except LaneError as exc:
        write_result(args, lane, "error", {}, [], str(exc), ran)
        return _fail(lane, str(exc), EXIT_ERROR)
    finally:
        memory = sampler.stop() if sampler is not None else {}  # before the server goes
        lane.close()
        if server:
            server.stop()
    try:
        passed, message, extra = lane.check(args, samples)
    except LaneError as exc:  # a check that asks another server (omni-speech's --asr-url) can fail too
        write_result(args, lane, "error", {}, samples, str(exc), ran)
        return _fail(lane, str(exc), EXIT_ERROR)
    summary = summarize(samples, wall, extra.pop("wer", None))
    summary.update(extra)
    summary.update(memory)
    status = "pass" if passed else "fail"
    write_result(args, lane, status, summary, samples, message, ran)
    print_table(lane.name, summary, status, message)
    return 0 if passed else EXIT_FAIL


def _main(lane: Lane, argv: list[str] | None) -> int:
    args = reused_parser(lane).parse_args(argv)
    lane.name = args.lane_id or lane.label(args)
    if args.compare:
        return _compare(lane, args.compare)
    if args.requests < 1 or args.concurrency < 1 or args.warmup < 0:
        return _fail(lane, "--requests and --concurrency must be >= 1, --warmup >= 0", EXIT_ERROR)
    try:
        lane.validate(args)
    except LaneError as exc:
        return _fail(lane, str(exc), EXIT_ERROR)
    if args.server_url and _server_url_problem(args.server_url):
        return _fail(lane, _server_url_problem(args.server_url), EXIT_ERROR)
    engine = lane.engine_kwargs(args)
    try:
        argv_server, env = (None, {}) if engine is not None else (launch_argv(lane, args), lane.server_env(args))
    except LaneError as exc:
        return _fail(lane, str(exc), EXIT_ERROR)
    if args.dry_run:
        return _dry_run(lane, args, argv_server, env, engine)
    if engine is not None:
        if args.launch or args.server_url or args.server_cmd:
            return _fail(lane, f"no server here: {lane.in_process_why}; drop --server-url, --launch and --server-cmd",
                         EXIT_ERROR)
        if args.concurrency != 1:
            return _fail(lane, "the in-process engine serves one request at a time: use --concurrency 1", EXIT_ERROR)
    elif not args.launch and not args.server_url:
        return _fail(lane, "pass --server-url URL, --launch or --dry-run", EXIT_ERROR)
    return _measure(lane, args, argv_server, env, engine)


EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl-C


def _interrupt(signum, _frame):
    """SIGINT or SIGTERM: unwind (so `finally` stops a launched server), ignoring repeats meanwhile."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(lane: Lane, argv: list[str] | None = None) -> int:
    """Run `lane` with this command line (default: sys.argv); returns the exit code."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _interrupt)
    try:
        return _main(lane, argv)
    except KeyboardInterrupt as exc:
        print(f"lane {lane.name}: interrupted ({exc or 'SIGINT'}); a launched server was stopped",
              file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`--dry-run | head`): stop quietly, as a SIGPIPE death would.
        # Point stdout at /dev/null so the flush at interpreter exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
