"""The one lane subprocess: answers in order, survives stray output, and recovers from a hang."""

from __future__ import annotations

import threading
import time

from dossier.lane_interpreter import LaneInterpreter


def _script(tmp_path, name, body):
    path = tmp_path / "lanes" / name
    path.parent.mkdir(exist_ok=True)
    # a lane's work runs under __main__ only: the interpreter also loads scripts to find their Lane
    path.write_text("if __name__ == '__main__':\n" + "".join(f"    {l}\n" for l in body.splitlines()))
    return str(path)


def test_answers_survive_output_written_straight_to_fd_1(tmp_path):
    noisy = _script(tmp_path, "noisy.py", "import os, sys\nos.write(1, b'raw line\\n{not json\\n')\n"
                                          "print('planned', sys.argv[1:])\nsys.exit(3)\n")
    interp = LaneInterpreter(tmp_path)
    try:
        results = interp.call("dry_runs", [[noisy, ["--dry-run"]], [noisy, ["--x"]]], timeout=30)
    finally:
        interp.close()
    assert results == [[3, "planned ['--dry-run']\n", ""], [3, "planned ['--x']\n", ""]]


def test_a_hung_request_returns_none_in_time_and_the_next_call_starts_afresh(tmp_path):
    hang = _script(tmp_path, "hang.py", "import time\ntime.sleep(60)\n")
    ok = _script(tmp_path, "ok.py", "print('fine')\n")
    interp = LaneInterpreter(tmp_path)
    try:
        start = time.monotonic()
        assert interp.call("dry_runs", [[hang, []]], timeout=1) is None
        assert time.monotonic() - start < 10
        assert interp.call("dry_runs", [[ok, []]], timeout=30) == [[0, "fine\n", ""]]
    finally:
        interp.close()


def test_an_unknown_request_or_a_dead_interpreter_is_none_not_a_crash(tmp_path):
    interp = LaneInterpreter(tmp_path)
    try:
        assert interp.call("no-such-op", None, timeout=30) is None
        assert interp.call("dry_runs", [], timeout=30) == []
        interp._proc.kill()
        interp._proc.wait()
        ok = _script(tmp_path, "ok.py", "print('again')\n")
        assert interp.call("dry_runs", [[ok, []]], timeout=30) == [[0, "again\n", ""]]
    finally:
        interp.close()


def test_threads_share_one_interpreter_and_each_gets_its_own_answer(tmp_path):
    scripts = [_script(tmp_path, f"s{i}.py", f"print({i})\n") for i in range(6)]
    interp = LaneInterpreter(tmp_path)
    got = {}

    def ask(i):
        got[i] = interp.call("dry_runs", [[scripts[i], []]], timeout=30)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        pid = interp._proc.pid
        assert interp.call("dry_runs", [[scripts[0], []]], timeout=30) == [[0, "0\n", ""]]
        assert interp._proc.pid == pid  # one process served every request
    finally:
        interp.close()
    assert got == {i: [[0, f"{i}\n", ""]] for i in range(6)}


def test_the_pinned_terminal_size_is_the_one_a_piped_child_finds_anyway():
    import os
    import subprocess
    import sys

    from dossier.lane_interpreter import child_env

    ask = [sys.executable, "-c", "import shutil; print(tuple(shutil.get_terminal_size()))"]
    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    for extra in ({}, {"COLUMNS": "132"}, {"LINES": "50"}, {"COLUMNS": "120", "LINES": "40"},
                  {"COLUMNS": "0", "LINES": "-3"}, {"COLUMNS": "wide", "LINES": ""}, {"COLUMNS": " 90 "}):
        environ = {**base, **extra}
        as_is = subprocess.run(ask, env=environ, capture_output=True, text=True, check=True).stdout
        pinned = subprocess.run(ask, env=child_env(environ), capture_output=True, text=True, check=True).stdout
        assert pinned == as_is, extra
        assert child_env(environ)["COLUMNS"].isdigit() and child_env(environ)["LINES"].isdigit()


def test_a_script_runs_once_for_its_options_and_all_its_dry_runs(tmp_path):
    folder = tmp_path / "playbook" / "lanes"
    folder.mkdir(parents=True)
    runs = tmp_path / "runs.txt"
    (folder / "_lane.py").write_text("class Lane:\n    pass\n")
    (folder / "_runner.py").write_text(
        "import argparse\n\ndef build_parser(lane):\n    p = argparse.ArgumentParser()\n"
        "    p.add_argument('--dry-run', action='store_true')\n    return p\n")
    (folder / "one.py").write_text(
        f"import sys\nopen({str(runs)!r}, 'a').write('loaded\\n')\nfrom _lane import Lane\nfrom _runner import build_parser\n"
        "class One(Lane):\n    pass\n"
        "def main(lane, argv=None):\n    build_parser(lane).parse_args(argv)\n    print('dry', argv)\n    return 0\n"
        "if __name__ == '__main__':\n    sys.exit(main(One()))\n")
    script = str(folder / "one.py")
    interp = LaneInterpreter(tmp_path)
    try:
        assert interp.call("options", str(folder), timeout=30)["one.py"]["options"]["--dry-run"]["takes_value"] is False
        assert interp.call("dry_runs", [[script, ["--dry-run"]], [script, []]], timeout=30) == [
            [0, "dry ['--dry-run']\n", ""], [0, "dry []\n", ""]]
    finally:
        interp.close()
    assert runs.read_text() == "loaded\n"



def test_a_request_sent_ahead_is_answered_once_when_asked_and_others_are_not_confused(tmp_path):
    runs = tmp_path / "runs"
    slow = _script(tmp_path, "slow.py", f"import time\ntime.sleep(0.3)\nopen({str(runs)!r}, 'a').write('slow\\n')\n"
                                        "print('slow done')\n")
    quick = _script(tmp_path, "quick.py", "print('quick')\n")
    interp = LaneInterpreter(tmp_path)
    try:
        interp.send_ahead("dry_runs", [[slow, []]])
        # another request first: its answer is its own, the early one is kept for its caller
        assert interp.call("dry_runs", [[quick, []]], timeout=30) == [[0, "quick\n", ""]]
        assert interp.call("dry_runs", [[slow, []]], timeout=30) == [[0, "slow done\n", ""]]
        assert runs.read_text() == "slow\n"  # answered from the early run, not run again
        assert interp.call("dry_runs", [[slow, []]], timeout=30) == [[0, "slow done\n", ""]]
        assert runs.read_text() == "slow\n" * 2  # a second call is a second request
    finally:
        interp.close()


def test_two_requests_sent_ahead_whose_answers_arrive_in_one_read_are_both_answered(tmp_path):
    done = tmp_path / "done"
    first = _script(tmp_path, "first.py", "print('one')\n")
    second = _script(tmp_path, "second.py", f"print('two')\nopen({str(done)!r}, 'w').write('x')\n")
    interp = LaneInterpreter(tmp_path)
    try:
        interp.send_ahead("dry_runs", [[first, []]])
        interp.send_ahead("dry_runs", [[second, []]])
        deadline = time.monotonic() + 30
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)  # both answers now wait in the pipe: the first read takes both
        assert interp.call("dry_runs", [[first, []]], timeout=5) == [[0, "one\n", ""]]
        assert interp.call("dry_runs", [[second, []]], timeout=5) == [[0, "two\n", ""]]
    finally:
        interp.close()


def test_a_request_sent_ahead_to_an_interpreter_that_died_is_asked_again(tmp_path):
    ok = _script(tmp_path, "ok.py", "print('fine')\n")
    interp = LaneInterpreter(tmp_path)
    try:
        interp.send_ahead("dry_runs", [[ok, []]])
        interp._proc.kill()
        interp._proc.wait()
        assert interp.call("dry_runs", [[ok, []]], timeout=30) == [[0, "fine\n", ""]]
    finally:
        interp.close()
