"""Three instances of the service on loopback behind a real nginx (deploy/nginx.conf, its
upstream pointed at them), sharing PostgreSQL (serve.database) and Redis
(serve.limits_storage), as docs/deploy.md runs them: under load (wrk), one instance killed
mid-run costs no request (nginx sends what it could not finish to another), and each
correction sent meanwhile (a client retrying once) is kept once; then a key's limit holds
across the instances left, not twice over, a correction sent to one is answered by each
one's memory, a glossary made through one is used by each, and a version named current in
the experiment's folder they share is swapped in by each."""

import os
import re
import shutil
import signal
import subprocess
import threading
import time

import pytest
from databases import needs_redis, start_redis

from benchmarks.service.contenders import free_port
from benchmarks.service.process import stop_server
from seq2seq.serving.keystore import KeyLimits, KeyStore
from seq2seq.support.paths import CURRENT, VERSIONS

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
    """INSTANCES services of the seed model (a copy, in an experiment's folder with a
    version 0001 not yet current) behind nginx, suggestions and the memory on: (their
    processes, their URLs, nginx's URL, the database's URL, the experiment's folder); a
    keys database with one key of 3 requests a minute ("limited") and none required."""
    run_dir = tmp_path / "runs/seed"
    (run_dir / VERSIONS / "0001").mkdir(parents=True)
    for copy in (run_dir / "best.pt", run_dir / VERSIONS / "0001/best.pt"):
        shutil.copy(seed_run / "best.pt", copy)
    redis_port = free_port()
    redis = start_redis(redis_port)
    keys = tmp_path / "keys.db"
    KeyStore(keys, create=True).add(KeyLimits(requests_per_minute=3), "limited")
    settings = (
        f"serve.database={postgresql}", f"serve.limits_storage=redis://127.0.0.1:{redis_port}/0",
        f"serve.api_keys={keys}", "serve.keys_required=false", "serve.trusted_proxies=[127.0.0.1]",
        f"serve.glossaries_file={tmp_path / 'unused.db'}", "serve.suggestions=true",
        "serve.memory=true", f"serve.suggestions_file={tmp_path / 'unused-suggestions.db'}",
        "serve.watch_versions_s=0.25",
    )  # fmt: skip
    servers = [start_server("--checkpoint", str(run_dir / "best.pt"), *settings)
               for _ in range(INSTANCES)]  # fmt: skip
    try:
        addresses = [read_address(server) for server in servers]
        upstreams = [address.split("//")[1].rstrip("/") for address in addresses]
        port = free_port()
        (tmp_path / "nginx.conf").write_text(nginx_config(tmp_path, port, upstreams))
        nginx = subprocess.Popen([NGINX, "-c", str(tmp_path / "nginx.conf"), "-e", "stderr"])
        wait_until(lambda: reachable(port), "nginx to answer", nginx, timeout=HANG)
        yield servers, addresses, f"http://127.0.0.1:{port}", postgresql, run_dir
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
    servers, addresses, url, database, run_dir = replicas
    (tmp_path / "post.lua").write_text(POST)
    killer = threading.Timer(KILL_AFTER_S, servers[0].send_signal, (signal.SIGKILL,))
    killer.start()
    retried: list[str] = []
    suggesting = threading.Thread(target=correct, args=(url, retried))
    suggesting.start()
    load = subprocess.run(
        [WRK, "-t", "2", "-c", "8", "-d", f"{LOAD_S}s", "-s", str(tmp_path / "post.lua"),
         f"{url}/translate"],
        capture_output=True, text=True, timeout=HANG,
    )  # fmt: skip
    killer.join()
    suggesting.join(HANG)
    assert servers[0].wait(timeout=HANG) == -signal.SIGKILL
    answered = int(re.search(r"(\d+) requests in", load.stdout).group(1))
    assert answered > 0 and "Non-2xx" not in load.stdout, load.stdout
    assert "Socket errors" not in load.stdout, load.stdout
    assert all(server.poll() is None for server in servers[1:])  # the others serve on

    limited = {**JSON, "Authorization": "Bearer limited"}
    statuses = [call(url, "POST", "/translate", {"text": ["one is one"]}, limited)[0]
                for _ in range(6)]  # fmt: skip
    assert statuses == [200, 200, 200, 429, 429, 429]  # across the instances: 3 in all

    kept = [(q, count) for q, _, count in suggested(database)]
    assert sorted(q for q, _ in kept) == sorted(q for q, _ in CORRECTIONS)  # each once
    assert all(count == 1 or q in retried for q, count in kept)  # twice: sent twice
    remembered = {"text": [CORRECTIONS[-1][0]], **PAIR}
    flags = [call(url, "POST", "/translate", remembered)[1]["memory"] for _ in range(INSTANCES)]
    assert flags == [[True]] * INSTANCES  # the memory of each instance left

    [pair] = call(url, "GET", "/v2/glossary-language-pairs")[1]["supported_languages"]
    status, made, _ = call(
        url, "POST", "/v2/glossaries", {"name": "n", **pair, "entries": "one\t1"}
    )
    assert status == 201, made
    asked = {"text": ["one is one"], "glossary": made["glossary_id"]}
    answers = [call(url, "POST", "/translate", asked)[0] for _ in range(2 * INSTANCES)]
    assert answers == [200] * (2 * INSTANCES)  # each instance left knows it

    current = run_dir / VERSIONS / CURRENT
    current.with_suffix(".new").write_text("0001\n")
    current.with_suffix(".new").replace(current)
    wait_until(
        lambda: all(versions(address) == ["0001"] for address in addresses[1:]),
        "version 0001 served by each instance left", timeout=HANG,
    )  # fmt: skip


PAIR = {"source": "en", "target": "digits"}
CORRECTIONS = [(f"number {n} is {n}", f"{n} la {n}") for n in range(20)]
SPACED_S = (LOAD_S - 1) / len(CORRECTIONS)  # the corrections sent across the load


def correct(url: str, retried: list[str]) -> None:
    """Each of CORRECTIONS sent to /suggest through nginx, SPACED_S apart, as a client that
    retries once what failed (not a 2xx, or the connection cut): those retried, in `retried`."""
    for q, s in CORRECTIONS:
        for _ in range(2):
            try:
                if call(url, "POST", "/suggest", {"q": q, "s": s, **PAIR})[0] == 200:
                    break
            except (OSError, ValueError):  # the connection cut; nginx's page of a 502
                pass
            retried.append(q)
        time.sleep(SPACED_S)


def suggested(database: str) -> list[tuple]:
    """The suggestions kept in the shared database: (q, s, count) each."""
    import psycopg

    with psycopg.connect(database) as connection:
        return connection.execute("SELECT q, s, count FROM suggestions").fetchall()


def versions(address: str) -> list[str | None]:
    """The version each model of the instance at `address` serves (GET /info)."""
    return [model["version"] for model in call(address, "GET", "/info")[1]["models"]]
