"""A real Daphne serving the app on the test database, as `make run` does (minus the seeding):
for the browser tests and for what only a running server does."""

import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager

from django.db import connection

from tests.sessions.test_background import ROOT, _database_url


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def daphne(**extra_env: str):
    """Daphne serving the app on the test database (what a person would run, minus the seeding)."""
    port = free_port()
    env = {key: value for key, value in os.environ.items() if key != "ANTHROPIC_API_KEY"}
    env |= {"DEBUG": "1", "BACKGROUND_WORK": "inprocess", **extra_env}
    if connection.vendor == "sqlite":
        env["SQLITE_PATH"] = connection.settings_dict["NAME"]
    else:
        env["DATABASE_URL"] = _database_url(connection.settings_dict)
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "office.asgi:application"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    else:
        process.kill()
        raise RuntimeError(process.stderr.read().decode()[-2000:])
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=15)
