"""`make prod` (deploy/prod): the whole topology comes up from one command, serves a person end
to end, restarts what dies, and goes down cleanly; production settings pass `check --deploy`."""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
import uuid

import pytest

from benchmarks.office_client import ChannelSocket, sign_in

from .conftest import needs_services
from .topology import ROOT, wait_for_port

PRODUCTION = {"DEBUG": "false", "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "office.example.com"}


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {key: value for key, value in os.environ.items() if key not in {"SECRET_KEY", "DEBUG", "HTTPS"}}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_is_clean_with_production_variables():
    done = manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_without_a_secret_key_production_refuses_to_start():
    done = manage("check", env={"DEBUG": "false"})
    assert done.returncode != 0
    assert "SECRET_KEY is required" in done.stderr


def test_make_prod_without_its_variables_says_what_is_missing():
    env = {key: value for key, value in os.environ.items() if key not in {"DATABASE_URL", "REDIS_URL", "SECRET_KEY"}}
    done = subprocess.run([str(ROOT / "deploy" / "prod")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "DATABASE_URL REDIS_URL SECRET_KEY" in done.stderr


async def one_instruction(topology, credentials, channel_id: int) -> list[dict]:
    socket = ChannelSocket(credentials, channel_id)
    await socket.open()
    start = len(socket.frames)
    await socket.send({"type": "instruction", "text": "Draft the launch plan outline", "client_id": uuid.uuid4().hex})
    await socket.wait_for(lambda f: f["type"] == "task" and f["status"] in {"done", "failed"}, timeout=60, start=start)
    await socket.close()
    return socket.frames[start:]


@needs_services
def test_the_topology_serves_a_person_restarts_what_dies_and_stops_cleanly(start_topology):
    topology = start_topology(env={"WEB_PROCESSES": "2", "PACED_CHUNK_MS": "30"})
    topology.manage("seed_demo")
    topology.manage("shell", "--verbosity", "0", "-c", "from django.contrib.auth.models import User; User.objects.create_user('op', password='op-pass-123')")
    topology.manage("add_member", "op", "acme")
    channel_id = int(topology.manage("shell", "--verbosity", "0", "-c", "from office.models import Channel; print(Channel.objects.get(kind='main').pk)"))

    credentials = sign_in(topology.base_url, "op", "op-pass-123")
    frames = asyncio.run(one_instruction(topology, credentials, channel_id))
    kinds = [frame["type"] for frame in frames]
    assert "delta" in kinds and kinds.index("delta") < len(kinds) - 1, kinds  # streamed before the end
    assert frames[-1]["status"] == "done"
    replies = [f["message"] for f in frames if f["type"] == "message" and f["message"]["role"] == "assistant"]
    assert len(replies) == 1 and replies[0]["content"].startswith("Paced reply")

    # Static files are the collected, hashed ones, cached for a long time.
    page = urllib.request.urlopen(urllib.request.Request(topology.base_url + "/accounts/login/")).read().decode()
    stylesheet = re.search(r'href="(/static/css/app\.[0-9a-f]{12}\.css)"', page)
    assert stylesheet, "the page links the hashed stylesheet"
    with urllib.request.urlopen(topology.base_url + stylesheet.group(1)) as response:
        assert response.status == 200
        assert "max-age=315360000" in response.headers["Cache-Control"]

    # A Daphne process that dies is replaced, and the office keeps answering.
    web = topology.running_pids("web:web-")
    assert len(web) == 2
    os.kill(web[0], signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (len(now := topology.running_pids("web:web-")) < 2 or web[0] in now):
        time.sleep(0.5)
    assert len(now) == 2 and web[0] not in now
    assert asyncio.run(one_instruction(topology, credentials, channel_id))[-1]["status"] == "done"

    # Down cleanly: supervisord exits 0 and takes every program with it.
    children = topology.running_pids("")
    assert topology.stop() == 0
    for pid in children:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    with pytest.raises(OSError):
        wait_for_port(topology.port, timeout=1)
