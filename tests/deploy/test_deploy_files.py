"""The deployment files work as written: ``ray_cluster.yaml``, ``deploy/Dockerfile``, the KubeRay manifests
and ``deploy/council.example.json``.

- ``ray_cluster.yaml`` is validated against the JSON schema shipped inside the installed ``ray`` package
  (``ray/autoscaler/ray-schema.json``), and, after Ray fills in its provider defaults, by Ray's own
  ``validate_config``, which also checks the node types. Broken copies must fail the same validation.
- No PyPI package ships the KubeRay CRDs (``ray.io/v1`` RayCluster and RayJob), so the manifests are checked
  structurally, field by field: apiVersion/kind/metadata/spec, head and worker group pod templates with
  named containers, the image, CPU and memory requests and limits, string-valued ``rayStartParams``.
- Every ``council run`` command the files give (the RayJob entrypoint, the commented launcher and
  RayCluster commands) is parsed with the CLI's own argument parser, and its paths are checked against the
  volumes, mounts and files they name.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema
import pytest
import ray
import yaml

from council.cli import build_parser, council_config, provider_url
from council.protocol.config import CouncilConfig
from council.run.runner import check_budget

REPO = Path(__file__).resolve().parents[2]
CLUSTER_YAML = REPO / "ray_cluster.yaml"
DEPLOY = REPO / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
KUBERAY = DEPLOY / "kuberay"
RAYCLUSTER = KUBERAY / "raycluster.yaml"
RAYJOB = KUBERAY / "rayjob.yaml"
PVC = KUBERAY / "data-pvc.yaml"
EXAMPLE_CONFIG = DEPLOY / "council.example.json"
RAY_SCHEMA = Path(os.path.dirname(ray.__file__)) / "autoscaler" / "ray-schema.json"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))

SECRET_NAME = "grading-council-api-key"
KEY_ENV = "COUNCIL_API_KEY"
# EC2 instance sizes by vCPU count, for the general-purpose and compute families this workload needs.
VCPUS = {"large": 2, "xlarge": 4}


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def cluster_config() -> dict[str, Any]:
    return load_yaml(CLUSTER_YAML)


def ray_schema() -> dict[str, Any]:
    return json.loads(RAY_SCHEMA.read_text(encoding="utf-8"))


def ray_major_minor() -> tuple[int, int]:
    major, minor = ray.__version__.split(".")[:2]
    return int(major), int(minor)


def project_image() -> str:
    return f"{PYPROJECT['project']['name']}:{PYPROJECT['project']['version']}"


def deploy_files() -> list[Path]:
    return [CLUSTER_YAML, *sorted(p for p in DEPLOY.rglob("*") if p.is_file())]


def council_commands_in_comments(path: Path) -> list[list[str]]:
    """Each ``council run ...`` command written in the file's comments (with ``\\`` continuations)."""
    commands, current = [], None
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.strip()
        if not text.startswith("#"):
            current = None
            continue
        text = text.lstrip("#").strip()
        if current is None and "council run" in text:
            current = text[text.index("council run"):]
        elif current is not None:
            current += " " + text
        else:
            continue
        if current.endswith("\\"):
            current = current[:-1].rstrip()
        else:
            commands.append(shlex.split(current))
            current = None
    return commands


def parse_council(argv: list[str]):
    assert argv[:2] == ["council", "run"], argv
    return build_parser().parse_args(argv[1:])


def under(path: Path | str, folder: str) -> bool:
    return PurePosixPath(str(path)).is_relative_to(PurePosixPath(folder))


# --------------------------------------------------------------------------------------------------------
# ray_cluster.yaml


def validate_cluster(config: dict[str, Any]) -> None:
    """The checks ``ray up`` makes before it touches a cloud: the schema on the file as written, then Ray's
    own validation of the config with its provider defaults filled in."""
    jsonschema.validate(config, ray_schema())
    from ray.autoscaler._private import util

    prepared = util.prepare_config(copy.deepcopy(config))
    util.validate_config(prepared)


def test_schema_is_the_one_inside_ray() -> None:
    assert RAY_SCHEMA.is_file()
    assert ray_schema()["required"] == ["cluster_name", "provider"]


def test_cluster_config_validates_against_rays_schema() -> None:
    validate_cluster(cluster_config())


def _drop_provider(c: dict) -> None:
    del c["provider"]


def _unknown_key(c: dict) -> None:
    c["head_ip"] = "10.0.0.1"


def _node_type_without_resources(c: dict) -> None:
    del c["available_node_types"][c["head_node_type"]]["resources"]


def _fractional_resources(c: dict) -> None:
    c["available_node_types"][c["head_node_type"]]["resources"] = {"CPU": 0.5}


def _max_workers_not_a_number(c: dict) -> None:
    c["max_workers"] = "two"


def _unknown_docker_option(c: dict) -> None:
    c["docker"]["privileged"] = True


def _commands_not_a_list(c: dict) -> None:
    c["setup_commands"] = "pip install -e ~/grading-council"


def _head_type_missing(c: dict) -> None:
    c["head_node_type"] = "no-such-node-type"


def _min_workers_above_max(c: dict) -> None:
    for node_type in c["available_node_types"].values():
        node_type["min_workers"] = c["max_workers"] + 1


@pytest.mark.parametrize("breakage", [
    _drop_provider, _unknown_key, _node_type_without_resources, _fractional_resources, _max_workers_not_a_number,
    _unknown_docker_option, _commands_not_a_list, _head_type_missing, _min_workers_above_max,
])
def test_broken_copies_do_not_validate(breakage) -> None:
    config = cluster_config()
    breakage(config)
    with pytest.raises((jsonschema.ValidationError, ValueError)):
        validate_cluster(config)


def test_cluster_is_on_a_real_cloud_provider_with_a_head_and_a_worker_type() -> None:
    c = cluster_config()
    provider = c["provider"]
    assert provider["type"] == "aws"
    region = provider["region"]
    assert re.fullmatch(r"[a-z]{2}-[a-z]+-\d", region)
    zones = provider["availability_zone"].split(",")
    assert zones and all(re.fullmatch(re.escape(region) + r"[a-z]", z) for z in zones), zones
    types = c["available_node_types"]
    head = c["head_node_type"]
    assert head in types
    workers = [name for name in types if name != head]
    assert workers, "a worker node type is needed next to the head type"
    assert c["max_workers"] >= max(types[w].get("max_workers", 0) for w in workers) >= 1
    for name, node_type in types.items():
        instance = node_type["node_config"]["InstanceType"]
        family, size = instance.split(".")
        assert re.fullmatch(r"[mct]\d[a-z]*", family), instance
        assert size in VCPUS, f"{name}: {instance}: this I/O-bound workload wants 2-4 vCPU nodes"


def test_setup_installs_this_project_from_the_mounted_checkout() -> None:
    c = cluster_config()
    # The checkout is mounted from the folder `ray up` runs in, the repository root.
    source_mounts = [remote for remote, local in c["file_mounts"].items()
                     if (REPO / Path(local).expanduser()).resolve() == REPO]
    assert len(source_mounts) == 1, c["file_mounts"]
    remote = source_mounts[0]
    assert (REPO / "pyproject.toml").is_file()
    installs = [shlex.split(cmd) for cmd in c["setup_commands"] if re.search(r"\bpip install\b", cmd)]
    from_source = [argv for argv in installs if remote in argv and ("-e" in argv or "--editable" in argv)]
    assert from_source, c["setup_commands"]
    every_command = " ".join(
        c.get("setup_commands", []) + c.get("head_setup_commands", []) + c.get("worker_setup_commands", []))
    assert "git+" not in every_command
    assert not re.search(r"pip install [^;&|]*\bgrading[-_]council\b(?![/\w])", every_command.replace(remote, "")), \
        "the project is not published: it is installed from the mounted checkout only"
    # Local state is not copied to the nodes.
    assert any(".git" in pattern for pattern in c["rsync_exclude"])
    assert ".gitignore" in c["rsync_filter"]


def test_start_commands_start_ray_with_the_keys_and_a_private_dashboard() -> None:
    c = cluster_config()
    head, worker = " ".join(c["head_start_ray_commands"]), " ".join(c["worker_start_ray_commands"])
    assert "ray start --head" in head
    assert re.search(r"ray start --address=\$RAY_HEAD_IP:6379", worker)
    assert "--dashboard-host=127.0.0.1" in head and "0.0.0.0" not in head
    secrets = [remote for remote in c["file_mounts"] if remote.endswith(".env")]
    assert len(secrets) == 1
    for commands in (head, worker):
        # exported to `ray start` in the same shell, and a missing file stops the start (&&, not ;)
        assert re.search(r"set -a && \. " + re.escape(secrets[0]) + r" && set \+a &&[^;]*ray start", commands)


def test_cluster_image_runs_the_installed_ray_and_python() -> None:
    image = cluster_config()["docker"]["image"]
    repo, tag = image.split(":")
    assert repo == "rayproject/ray"
    assert_tag_matches_ray(tag)
    assert image == dockerfile_base_image()


def test_documented_launcher_command_parses_and_uses_the_mounted_config() -> None:
    c = cluster_config()
    commands = council_commands_in_comments(CLUSTER_YAML)
    assert commands
    remote_checkout = next(remote for remote, local in c["file_mounts"].items() if local == ".")
    home = "/home/ray"  # the home folder of the Ray image's user, where "~" points on the nodes
    checkout = remote_checkout.replace("~", home, 1)
    for argv in commands:
        args = parse_council(argv)
        assert args.ray_address == "auto"
        assert args.provider_url.startswith("https://")
        assert under(args.config, checkout)
        local = REPO / PurePosixPath(str(args.config)).relative_to(checkout)
        CouncilConfig.from_file(local)
        assert under(args.runs_dir, home) and not under(args.runs_dir, checkout)
    text = CLUSTER_YAML.read_text(encoding="utf-8")
    for step in ("ray up ray_cluster.yaml", "ray job submit", "ray down ray_cluster.yaml"):
        assert step in text


# --------------------------------------------------------------------------------------------------------
# deploy/Dockerfile


def dockerfile_lines() -> list[str]:
    text = DOCKERFILE.read_text(encoding="utf-8").replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def dockerfile_base_image() -> str:
    froms = [line.split()[1] for line in dockerfile_lines() if line.upper().startswith("FROM ")]
    assert len(froms) == 1
    return froms[0]


def assert_tag_matches_ray(tag: str) -> None:
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)-py(\d)(\d+)", tag)
    assert m, tag
    assert (int(m[1]), int(m[2])) == ray_major_minor(), f"image Ray {tag} vs installed Ray {ray.__version__}"
    python = f"{m[4]}.{m[5]}"
    assert PYPROJECT["project"]["requires-python"] == f">={python}"


def test_dockerfile_base_image_matches_installed_ray() -> None:
    repo, tag = dockerfile_base_image().split(":")
    assert repo == "rayproject/ray"
    assert_tag_matches_ray(tag)


def test_dockerfile_copies_every_package_and_installs_the_project() -> None:
    lines = dockerfile_lines()
    workdir, copied, install_dir = None, {}, None
    for line in lines:
        op, _, rest = line.partition(" ")
        if op.upper() == "WORKDIR":
            workdir = rest.strip()
        elif op.upper() == "COPY":
            parts = [p for p in rest.split() if not p.startswith("--")]
            *sources, dest = parts
            for source in sources:
                copied[source] = str(PurePosixPath(workdir) / dest) if not dest.startswith("/") else dest
        elif op.upper() == "RUN" and re.search(r"pip install (--[\w-]+ )*\.(\s|$)", rest):
            install_dir = workdir
    assert install_dir, "the image must `pip install .` the copied project"
    patterns = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = sorted(p.name for p in REPO.iterdir()
                      if p.is_dir() and any(re.fullmatch(pat.replace("*", ".*"), p.name) for pat in patterns)
                      and any(p.rglob("*.py")))
    assert {"council", "bank", "aggregator", "elicitor"} <= set(packages)
    for needed in [*packages, "pyproject.toml", PYPROJECT["project"]["readme"]]:
        assert needed in copied, f"{needed} is not copied into the image"
        assert under(copied[needed], install_dir), (needed, copied[needed], install_dir)
    # The base image's unprivileged user owns what it builds.
    assert all("--chown=ray:users" in line for line in lines if line.upper().startswith("COPY "))


def test_dockerfile_build_command_makes_the_manifests_image() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert f"docker build -f deploy/Dockerfile -t {project_image()} ." in text


# --------------------------------------------------------------------------------------------------------
# deploy/kuberay


QUANTITY = re.compile(r"\d+(\.\d+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?")


def containers_of(group: dict[str, Any]) -> list[dict[str, Any]]:
    return group["template"]["spec"]["containers"]


def check_cluster_spec(spec: dict[str, Any]) -> None:
    assert spec["rayVersion"].split(".")[:2] == [str(n) for n in ray_major_minor()]
    assert spec["rayVersion"] == dockerfile_base_image().split(":")[1].split("-")[0]
    head = spec["headGroupSpec"]
    workers = spec["workerGroupSpecs"]
    assert isinstance(workers, list) and workers
    groups = [("head", head), *((w["groupName"], w) for w in workers)]
    for name, group in groups:
        params = group["rayStartParams"]
        assert isinstance(params, dict) and all(isinstance(v, str) for v in params.values()), name
        containers = containers_of(group)
        assert containers, name
        for container in containers:
            assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", container["name"])
            assert container["image"] == project_image()
            resources = container["resources"]
            for kind in ("requests", "limits"):
                for resource in ("cpu", "memory"):
                    assert QUANTITY.fullmatch(str(resources[kind][resource])), (name, kind, resource)
            assert resources["requests"] == resources["limits"], "Ray sizes itself by its limits"
            assert_key_from_secret(container)
    for w in workers:
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", w["groupName"])
        assert 0 <= w["minReplicas"] <= w["replicas"] <= w["maxReplicas"]
    assert head["rayStartParams"].get("dashboard-host") == "0.0.0.0", "KubeRay's job submitter calls the dashboard"


def assert_key_from_secret(container: dict[str, Any]) -> None:
    env = {e["name"]: e for e in container.get("env", [])}
    assert KEY_ENV in env, container["name"]
    ref = env[KEY_ENV]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": SECRET_NAME, "key": KEY_ENV}
    for e in env.values():
        if re.search(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", e["name"], re.I):
            assert "value" not in e, f"{e['name']} must come from a Secret"


@pytest.mark.parametrize("path", [RAYCLUSTER, RAYJOB, PVC], ids=lambda p: p.name)
def test_manifest_has_the_kubernetes_shape(path: Path) -> None:
    docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    assert len(docs) == 1
    doc = docs[0]
    assert {"apiVersion", "kind", "metadata", "spec"} <= set(doc)
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", doc["metadata"]["name"])
    assert doc["kind"] != "Secret", "keys are never in a manifest"


def test_raycluster_structure() -> None:
    doc = load_yaml(RAYCLUSTER)
    assert (doc["apiVersion"], doc["kind"]) == ("ray.io/v1", "RayCluster")
    check_cluster_spec(doc["spec"])


def test_rayjob_structure_and_same_cluster() -> None:
    doc = load_yaml(RAYJOB)
    assert (doc["apiVersion"], doc["kind"]) == ("ray.io/v1", "RayJob")
    spec = doc["spec"]
    assert spec["shutdownAfterJobFinishes"] is True
    check_cluster_spec(spec["rayClusterSpec"])
    assert spec["rayClusterSpec"] == load_yaml(RAYCLUSTER)["spec"], "the RayJob's cluster is raycluster.yaml's"


def head_mounts(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """mountPath -> the volume mounted there, in the head container."""
    pod = spec["headGroupSpec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    return {m["mountPath"]: volumes[m["name"]] for m in pod["containers"][0]["volumeMounts"]}


def mount_of(mounts: dict[str, dict[str, Any]], path: Path) -> dict[str, Any]:
    owners = [volume for mount, volume in mounts.items() if under(path, mount)]
    assert len(owners) == 1, f"{path} is on no mounted volume"
    return owners[0]


def check_kubernetes_command(argv: list[str], spec: dict[str, Any]) -> None:
    """A ``council run`` on the head of ``spec``: it joins the cluster, its inputs and run folders are on the
    data volume, its config is the ConfigMap made from deploy/council.example.json, and the CLI accepts it."""
    args = parse_council(argv)
    assert args.ray_address == "auto"
    assert provider_url(args) == args.provider_url and args.provider_url.startswith("https://")
    mounts = head_mounts(spec)
    claim = load_yaml(PVC)["metadata"]["name"]
    for path in (args.bank, args.responses, args.runs_dir):
        assert mount_of(mounts, path)["persistentVolumeClaim"]["claimName"] == claim
    assert mount_of(mounts, args.config)["configMap"]["name"] == "grading-council-config"
    args.config = EXAMPLE_CONFIG  # what `kubectl create configmap ... --from-file=...` puts there
    check_budget(council_config(args), [])


def test_rayjob_entrypoint_runs_the_council_on_the_cluster() -> None:
    doc = load_yaml(RAYJOB)
    argv = shlex.split(doc["spec"]["entrypoint"])
    check_kubernetes_command(argv, doc["spec"]["rayClusterSpec"])
    assert "--ray-address" in argv


def test_raycluster_documented_command_runs_the_council_on_the_cluster() -> None:
    commands = council_commands_in_comments(RAYCLUSTER)
    assert commands
    for argv in commands:
        check_kubernetes_command(argv, load_yaml(RAYCLUSTER)["spec"])


def test_configmap_is_made_from_the_example_config() -> None:
    for path in (RAYCLUSTER, DEPLOY / "README.md"):
        assert ("kubectl create configmap grading-council-config "
                "--from-file=council.json=deploy/council.example.json") in path.read_text(encoding="utf-8")
    mounts = head_mounts(load_yaml(RAYCLUSTER)["spec"])
    config_mount = next(m for m, v in mounts.items() if "configMap" in v)
    assert config_mount == "/etc/grading-council"  # + council.json, the key given to --from-file


def test_data_volume_claim() -> None:
    doc = load_yaml(PVC)
    assert (doc["apiVersion"], doc["kind"]) == ("v1", "PersistentVolumeClaim")
    assert doc["spec"]["accessModes"]
    assert QUANTITY.fullmatch(doc["spec"]["resources"]["requests"]["storage"])


# --------------------------------------------------------------------------------------------------------
# every deployment file


KEY_LOOKING = [
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),                  # OpenAI / Anthropic / OpenRouter style
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),                     # AWS access key id
    re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"),                 # Google API key
    re.compile(r"(?i)bearer\s+[A-Za-z0-9._~+/-]{16,}"),
    re.compile(r"(?i)(api[_-]?key|token|secret)\s*[:=]\s*['\"]?[A-Za-z0-9_+/-]{20,}"),
]
PLACEHOLDERS = [
    re.compile(r"(?<![A-Za-z0-9_$])HEAD_IP\b"),
    re.compile(r"\b(TODO|FIXME|XXX|CHANGEME|CHANGE_ME|REPLACE_ME)\b"),
    re.compile(r"(?i)\bfill (it )?in\b"),
    re.compile(r"<[^<>\n]+>"),
]


@pytest.mark.parametrize("path", deploy_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_placeholders_and_no_keys(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for pattern in PLACEHOLDERS:
        assert not pattern.search(text), f"{path.name}: placeholder {pattern.search(text)[0]!r}"
    for pattern in KEY_LOOKING:
        assert not pattern.search(text), f"{path.name}: key-looking text {pattern.search(text)[0]!r}"


def test_placeholder_check_catches_the_old_template() -> None:
    old = "provider:\n  type: local\n  head_ip: HEAD_IP\nsetup_commands:\n  - pip install <package>\n"
    assert sum(bool(p.search(old)) for p in PLACEHOLDERS) == 2
    assert not any(p.search("ray start --address=$RAY_HEAD_IP:6379") for p in PLACEHOLDERS)
    assert any(p.search("value: sk-or-v1-0123456789abcdef0123") for p in KEY_LOOKING)


# --------------------------------------------------------------------------------------------------------
# deploy/council.example.json


def test_example_config_is_a_council_config_fit_for_a_budget() -> None:
    config = CouncilConfig.from_file(EXAMPLE_CONFIG)
    regular = [m for m in config.roster if not m.reserve]
    reserves = [m for m in config.roster if m.reserve]
    # Self-exclusion empties one seat on a roster vendor's rows; a reserve refills it, so panels stay odd.
    assert len(regular) % 2 == 1 and reserves
    assert set(config.vendors) == {m.vendor for m in config.roster}
    assert config.model_copy(update={"budget_usd": 1.0}).unpriced([]) == []


def test_readme_cluster_commands_parse() -> None:
    """The Ray cluster guide (docs/ray-cluster.md) gives commands the CLI accepts."""
    section = (REPO / "docs" / "ray-cluster.md").read_text(encoding="utf-8")
    joined = re.sub(r"\\\n\s*", " ", section)
    commands = [shlex.split(line[line.index("council run"):]) for line in joined.splitlines()
                if "council run --ray-address" in line]
    assert commands
    for argv in commands:
        args = parse_council(argv)
        assert args.ray_address == "auto" and args.provider_url.startswith("https://")
    for path in ("ray_cluster.yaml", "deploy/kuberay/raycluster.yaml", "deploy/kuberay/rayjob.yaml"):
        assert path in section and (REPO / path).is_file()
