"""deploy/: the files an operator deploys the service with (docs/deploy.md), checked against
the code they configure: each serve setting their environment sets is one the service knows,
with a value it takes; the image copies what its build context holds; the probes ask a route
the service answers."""

import re

import yaml

from seq2seq.config import load_config
from seq2seq.serve_options import environment_settings

from helpers import ROOT

DEPLOY = ROOT / "deploy"


def environments() -> dict[str, dict[str, str]]:
    """Each container's environment: {where: {name: value}}, from the compose file and the
    Kubernetes manifest (values from a Secret: a URL of the kind it names)."""
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    found = {f"compose {name}": service.get("environment", {})
             for name, service in compose["services"].items()}  # fmt: skip
    for document in yaml.safe_load_all((DEPLOY / "kubernetes.yaml").read_text()):
        if document["kind"] != "Deployment":
            continue
        for container in document["spec"]["template"]["spec"]["containers"]:
            secrets = {"database": "postgresql://u:p@db/x", "limits-storage": "redis://r:6379/0"}
            found[f"kubernetes {container['name']}"] = {
                variable["name"]: variable.get("value")
                or secrets[variable["valueFrom"]["secretKeyRef"]["key"]]
                for variable in container["env"]
            }
    return found


def test_every_setting_the_deploy_files_set_is_one_the_service_takes():
    environments_found = environments()
    assert set(environments_found) >= {"compose seq2seq", "kubernetes seq2seq"}
    for where, environment in environments_found.items():
        settings = environment_settings(environment)
        ours = [name for name in environment if name.startswith(("SEQ2SEQ_", "LT_"))]
        assert len(settings) == len(ours), where
        config = load_config(ROOT / "config.yaml", [setting for _, setting in settings])
        if where.endswith("seq2seq"):
            assert config.serve.database.startswith("postgresql://"), where
            assert config.serve.limits_storage.startswith("redis://"), where


def test_the_image_copies_what_its_build_context_keeps():
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    copied = {
        name.rstrip("/")
        for line in dockerfile.splitlines()
        if line.startswith("COPY ")
        for name in line.split()[1:-1]
    }
    kept = {
        line[1:].rstrip("/")
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.startswith("!")
    }
    assert copied == kept and all((ROOT / name).exists() for name in copied)
    assert re.search(r"^USER seq2seq$", dockerfile, re.MULTILINE)  # not root
    assert 'ENTRYPOINT ["python", "-m", "seq2seq.serve"]' in dockerfile


def test_the_probes_and_the_ports_are_the_services():
    manifest = list(yaml.safe_load_all((DEPLOY / "kubernetes.yaml").read_text()))
    [deployment] = [document for document in manifest if document["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    port = container["ports"][0]["containerPort"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/health", "port": port}
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert f"SEQ2SEQ_SERVE_PORT={port}" in dockerfile and f"EXPOSE {port}" in dockerfile
    assert f"server seq2seq:{port}" in (DEPLOY / "nginx.conf").read_text()
