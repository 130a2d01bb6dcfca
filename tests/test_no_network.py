"""The suite's own guard (conftest.no_network): loopback works, anything else fails at once."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

import pytest

from conftest import NetworkBlocked


def test_a_connection_past_loopback_fails_at_once():
    with pytest.raises(NetworkBlocked, match="192.0.2.1"):
        socket.create_connection(("192.0.2.1", 443), timeout=5)  # TEST-NET-1: documentation only
    with pytest.raises(NetworkBlocked, match="pypi.org"):
        socket.getaddrinfo("pypi.org", 443)
    with socket.socket(socket.AF_INET6) as s, pytest.raises(NetworkBlocked):
        s.connect_ex(("2001:db8::1", 443, 0, 0))


def test_loopback_still_works():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        accepted = []
        t = threading.Thread(target=lambda: accepted.append(server.accept()[0].close()))
        t.start()
        with socket.create_connection(("localhost", port), timeout=5):
            pass
        t.join(5)
    assert accepted == [None]


def test_a_subprocess_goes_through_a_proxy_that_refuses():
    assert os.environ["https_proxy"] == "http://127.0.0.1:9" and "127.0.0.1" in os.environ["no_proxy"]
    code = ("import urllib.request, sys\n"
            "try:\n"
            "    urllib.request.urlopen('https://pypi.org/simple/', timeout=5)\n"
            "except OSError as e:\n"
            "    print(e)\n"
            "    sys.exit(3)\n")
    res = subprocess.run([sys.executable, "-c", code], timeout=60, capture_output=True, text=True)
    assert res.returncode == 3 and "refused" in res.stdout.lower(), res.stdout  # the proxy refused, no timeout
