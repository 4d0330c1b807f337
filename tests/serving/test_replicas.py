"""Three instances of the service on loopback behind a real nginx (deploy/nginx.conf, its
upstream pointed at them), sharing PostgreSQL (serve.database) and Redis
(serve.limits_storage), as docs/deploy.md runs them: under load (wrk), one instance killed
mid-run costs no request (nginx sends what it could not finish to another); then a key's limit
holds across the instances left, not twice over, and a glossary made through one is used by
each."""

import os
import re
import shutil
import signal
import subprocess
import threading

import pytest
from databases import needs_redis, start_redis

from benchmarks.service.contenders import free_port
from benchmarks.service.process import stop_server
from seq2seq.serving.keystore import KeyLimits, KeyStore

from helpers import HANG, JSON, ROOT, call, read_address, start_server, wait_until

NGINX, WRK = shutil.which("nginx"), shutil.which("wrk")
needs_nginx = pytest.mark.skipif(
    NGINX is None or WRK is None, reason="no nginx or wrk (apt install nginx wrk)"
)
pytest.importorskip("limits", reason="shared limits are the extra seq2seq[replicas]")
INSTANCES = 3
LOAD_S = 6  # wrk's run; an instance killed KILL_AFTER_S into it
KILL_AFTER_S = 2
POST = """wrk.method = "POST"
wrk.body = '{"text": ["one is one", "two is two"]}'
wrk.headers["Content-Type"] = "application/json"
"""


def nginx_config(folder, port: int, upstreams: list[str]) -> str:
    """deploy/nginx.conf with its upstream the instances' addresses and listening on `port`,
    inside an http block whose files are all in `folder`."""
    site = (ROOT / "deploy/nginx.conf").read_text()
    servers = "".join(f"server {upstream} max_fails=1 fail_timeout=5s;\n" for upstream in upstreams)
    site, found = re.subn(r"server seq2seq:5000 [^;]*;", servers, site)
    assert found == 1
    site = site.replace("listen 80;", f"listen 127.0.0.1:{port};")
    temporary = "".join(
        f"{kind}_temp_path {folder / kind};\n" for kind in ("client_body", "proxy", "fastcgi",
                                                          "uwsgi", "scgi")
    )  # fmt: skip
    user = "user root root;\n" if os.geteuid() == 0 else ""  # its workers: to reach `folder`
    return (
        f"{user}daemon off;\nworker_processes 1;\npid {folder / 'nginx.pid'};\n"
        f"error_log {folder / 'error.log'};\nevents {{ worker_connections 512; }}\n"
        f"http {{\naccess_log off;\n{temporary}{site}}}\n"
    )


@pytest.fixture
def replicas(seed_run, postgresql, tmp_path):
    """INSTANCES services of the seed model behind nginx: (their processes, nginx's URL); a
    keys database with one key of 3 requests a minute ("limited") and none required."""
    redis_port = free_port()
    redis = start_redis(redis_port)
    keys = tmp_path / "keys.db"
    KeyStore(keys, create=True).add(KeyLimits(requests_per_minute=3), "limited")
    settings = (
        f"serve.database={postgresql}", f"serve.limits_storage=redis://127.0.0.1:{redis_port}/0",
        f"serve.api_keys={keys}", "serve.keys_required=false", "serve.trusted_proxies=[127.0.0.1]",
        f"serve.glossaries_file={tmp_path / 'unused.db'}",
    )  # fmt: skip
    servers = [start_server("--checkpoint", str(seed_run / "best.pt"), *settings)
               for _ in range(INSTANCES)]  # fmt: skip
    try:
        upstreams = [read_address(server).split("//")[1].rstrip("/") for server in servers]
        port = free_port()
        (tmp_path / "nginx.conf").write_text(nginx_config(tmp_path, port, upstreams))
        nginx = subprocess.Popen([NGINX, "-c", str(tmp_path / "nginx.conf"), "-e", "stderr"])
        wait_until(lambda: reachable(port), "nginx to answer", nginx, timeout=HANG)
        yield servers, f"http://127.0.0.1:{port}"
        nginx.terminate()
        nginx.wait()
    finally:
        for server in servers:
            stop_server(server)
        redis.kill()
        redis.wait()


def reachable(port: int) -> bool:
    try:
        return call(f"http://127.0.0.1:{port}", "GET", "/health")[0] == 200
    except OSError:
        return False


@needs_redis
@needs_nginx
def test_replicas_behind_nginx_lose_no_request_when_one_dies_and_agree(replicas, tmp_path):
    servers, url = replicas
    (tmp_path / "post.lua").write_text(POST)
    killer = threading.Timer(KILL_AFTER_S, servers[0].send_signal, (signal.SIGKILL,))
    killer.start()
    load = subprocess.run(
        [WRK, "-t", "2", "-c", "8", "-d", f"{LOAD_S}s", "-s", str(tmp_path / "post.lua"),
         f"{url}/translate"],
        capture_output=True, text=True, timeout=HANG,
    )  # fmt: skip
    killer.join()
    assert servers[0].wait(timeout=HANG) == -signal.SIGKILL
    answered = int(re.search(r"(\d+) requests in", load.stdout).group(1))
    assert answered > 0 and "Non-2xx" not in load.stdout, load.stdout
    assert "Socket errors" not in load.stdout, load.stdout
    assert all(server.poll() is None for server in servers[1:])  # the others serve on

    limited = {**JSON, "Authorization": "Bearer limited"}
    statuses = [call(url, "POST", "/translate", {"text": ["one is one"]}, limited)[0]
                for _ in range(6)]  # fmt: skip
    assert statuses == [200, 200, 200, 429, 429, 429]  # across the instances: 3 in all

    [pair] = call(url, "GET", "/v2/glossary-language-pairs")[1]["supported_languages"]
    status, made, _ = call(
        url, "POST", "/v2/glossaries", {"name": "n", **pair, "entries": "one\t1"}
    )
    assert status == 201, made
    asked = {"text": ["one is one"], "glossary": made["glossary_id"]}
    answers = [call(url, "POST", "/translate", asked)[0] for _ in range(2 * INSTANCES)]
    assert answers == [200] * (2 * INSTANCES)  # each instance left knows it
