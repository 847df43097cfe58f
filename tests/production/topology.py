"""The production topology (`deploy/prod`: Daphne processes, Celery workers and beat under
supervisord) started for a test against its own PostgreSQL database and Redis database.

Nothing is mocked: the test talks to it over HTTP and websockets like a browser would.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[2]
PROD = ROOT / "deploy" / "prod"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, timeout: float, *, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the process exited with {process.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s")


def fresh_database(server_url: str, name: str) -> str:
    """Create an empty database `name` on the server of `server_url` (dropping an old one); its URL."""
    parts = urllib.parse.urlsplit(server_url)
    with psycopg.connect(urllib.parse.urlunsplit(parts._replace(path="/postgres")), autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')
    return urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))


def drop_database(url: str) -> None:
    parts = urllib.parse.urlsplit(url)
    name = parts.path.lstrip("/")
    with psycopg.connect(urllib.parse.urlunsplit(parts._replace(path="/postgres")), autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Topology:
    """One `deploy/prod` run. `env` adds to or overrides its environment."""

    database_url: str
    redis_url: str
    run_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    secret_key: str = field(default_factory=lambda: secrets.token_urlsafe(50))
    process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def environment(self) -> dict[str, str]:
        return {
            **os.environ,
            "DATABASE_URL": self.database_url,
            "REDIS_URL": self.redis_url,
            "SECRET_KEY": self.secret_key,
            "DEBUG": "false",
            "HTTPS": "off",  # plain HTTP on loopback; the HTTPS settings are checked by check --deploy
            "PORT": str(self.port),
            "RUN_DIR": str(self.run_dir),
            "STATIC_ROOT": str(self.run_dir / "static"),
            "VENV_BIN": str(Path(sys.executable).parent),
            "MODEL_PROVIDER": "paced",
            "LOG_LEVEL": "WARNING",
            **self.env,
        }

    def manage(self, *args: str) -> str:
        """Run a management command against this topology's database; its stdout."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.environment,
            capture_output=True, text=True, timeout=120,
        )
        if done.returncode:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def start(self, timeout: float = 90.0) -> Topology:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.run_dir / "prod.log", "ab")
        self.process = subprocess.Popen(
            [str(PROD)], cwd=ROOT, env=self.environment, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for_port(self.port, timeout, process=self.process)
        return self

    def stop(self, timeout: float = 90.0) -> int:
        """Stop supervisord (and with it every program) as an operator would: TERM, then wait."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            raise

    def running_pids(self, program: str = "") -> list[int]:
        """Pids supervisord reports RUNNING for programs whose name starts with `program` (all by default)."""
        status = subprocess.run(
            [str(Path(self.environment["VENV_BIN"]) / "supervisorctl"), "-c", str(ROOT / "deploy" / "supervisord.conf"), "status"],
            env=self.environment, capture_output=True, text=True, timeout=30,
        ).stdout
        return [int(pid) for pid in re.findall(rf"^{re.escape(program)}\S*\s+RUNNING\s+pid (\d+)", status, re.MULTILINE)]

    def log(self) -> str:
        path = self.run_dir / "prod.log"
        return path.read_text(errors="replace") if path.exists() else ""
