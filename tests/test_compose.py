"""The compose stack, checked as files: no container engine runs here.

The same topology runs with processes in test_phoenix_roundtrip.py (app ->
Phoenix + trace files -> nightly job -> report + annotations).
"""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _compose() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert isinstance(data, dict)
    return data


def _collector() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "deploy" / "otel-collector.yaml").read_text())
    assert isinstance(data, dict)
    return data


def test_services_images_pinned_and_ports() -> None:
    services = _compose()["services"]
    assert set(services) == {"phoenix", "otel-collector", "citeline-nightly"}
    for name, svc in services.items():
        image = svc["image"]
        repo, _, tag = image.rpartition(":")
        assert repo and tag and tag != "latest", f"{name}: pin an exact image tag, got {image!r}"
        assert re.search(r"\d+\.\d+\.\d+", tag), f"{name}: tag {tag!r} is not a version"
    # Phoenix in compose is the Phoenix the tests run against
    assert services["phoenix"]["image"] == f"arizephoenix/phoenix:version-{version('arize-phoenix')}"
    assert services["otel-collector"]["image"].startswith("otel/opentelemetry-collector-contrib:")
    assert services["citeline-nightly"]["build"] == "."
    assert services["phoenix"]["ports"] == ["6006:6006"]
    assert sorted(services["otel-collector"]["ports"]) == ["4317:4317", "4318:4318"]


def test_trace_volume_is_shared_between_collector_and_job() -> None:
    compose = _compose()
    services = compose["services"]
    assert {"traces", "phoenix-data"} <= set(compose["volumes"])
    collector_mounts = services["otel-collector"]["volumes"]
    job_mounts = services["citeline-nightly"]["volumes"]
    assert "traces:/traces" in collector_mounts
    assert "traces:/traces:ro" in job_mounts
    config_mount = next(m for m in collector_mounts if m.endswith(":/etc/otelcol/config.yaml:ro"))
    assert (ROOT / config_mount.split(":")[0]).resolve() == (ROOT / "deploy" / "otel-collector.yaml").resolve()
    assert services["otel-collector"]["command"] == ["--config=/etc/otelcol/config.yaml"]
    env = services["citeline-nightly"]["environment"]
    assert env["CITELINE_TRACES"] == "/traces"
    assert env["CITELINE_PHOENIX_API"] == "http://phoenix:6006"
    assert set(services["citeline-nightly"]["depends_on"]) == {"phoenix", "otel-collector"}


def test_collector_pipeline_fans_out_to_phoenix_and_files() -> None:
    cfg = _collector()
    pipeline = cfg["service"]["pipelines"]["traces"]
    assert pipeline["receivers"] == ["otlp"]
    assert set(cfg["receivers"]["otlp"]["protocols"]) == {"grpc", "http"}
    exporters = pipeline["exporters"]
    assert len(exporters) == 2
    for name in exporters:
        assert name in cfg["exporters"], f"pipeline names undefined exporter {name}"
    phoenix = next(cfg["exporters"][e] for e in exporters if e.split("/")[0] == "otlphttp")
    files = next(cfg["exporters"][e] for e in exporters if e.split("/")[0] == "file")
    assert phoenix["endpoint"] == "http://phoenix:6006"  # the compose service, OTLP/HTTP port
    assert files["path"].startswith("/traces/")  # the volume the nightly job reads
    assert files["format"] == "json"
    assert files["rotation"]["max_megabytes"] <= 64
    assert set(pipeline["processors"]) <= set(cfg["processors"])


def test_dockerfile_and_nightly_script() -> None:
    docker = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11[\w.-]*$", docker, re.M)
    assert "pip install --no-cache-dir ." in docker
    assert "COPY deploy/nightly.sh /usr/local/bin/citeline-nightly" in docker
    assert 'ENTRYPOINT ["citeline-nightly"]' in docker
    script = (ROOT / "deploy" / "nightly.sh").read_text()
    for command in ("analyze --traces", "report --db", "annotate --db"):
        assert command in script
