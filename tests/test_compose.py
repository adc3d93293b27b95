"""The compose stack, checked as files: no container engine runs here.

The same topology runs with processes in test_phoenix_roundtrip.py (app ->
Phoenix + trace files -> nightly job -> report + annotations). deploy/nightly.sh's choice
of engine is run here for real, with a stand-in ``citeline`` on PATH that records its argv.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, requires, version
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.extras import TEST_EXTRA, needs

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
    assert set(services) == {"phoenix", "otel-collector", "dask-scheduler", "dask-worker", "citeline-nightly"}
    for name, svc in services.items():
        image = svc["image"]
        repo, _, tag = image.rpartition(":")
        assert repo and tag and tag != "latest", f"{name}: pin an exact image tag, got {image!r}"
        assert re.search(r"\d+\.\d+\.\d+", tag), f"{name}: tag {tag!r} is not a version"
    assert services["otel-collector"]["image"].startswith("otel/opentelemetry-collector-contrib:")
    assert services["citeline-nightly"]["build"] == "."
    assert services["phoenix"]["ports"] == ["6006:6006"]
    assert sorted(services["otel-collector"]["ports"]) == ["4317:4317", "4318:4318"]
    # whoever reaches a Dask scheduler runs code on its workers: nothing of the cluster is published
    for name in ("dask-scheduler", "dask-worker", "citeline-nightly"):
        assert "ports" not in services[name], name


def test_compose_runs_the_phoenix_the_tests_run_against() -> None:
    try:
        tested = version("arize-phoenix")
    except PackageNotFoundError:
        pytest.skip(f"needs arize-phoenix (the Phoenix server the tests run): {TEST_EXTRA}")
    assert _compose()["services"]["phoenix"]["image"] == f"arizephoenix/phoenix:version-{tested}"


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
    assert set(services["citeline-nightly"]["depends_on"]) == {
        "phoenix",
        "otel-collector",
        "dask-scheduler",
        "dask-worker",
    }


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
    assert 'pip install --no-cache-dir ".[dask]"' in docker  # the scheduler and workers run this image
    assert "COPY deploy/nightly.sh /usr/local/bin/citeline-nightly" in docker
    assert 'ENTRYPOINT ["citeline-nightly"]' in docker
    script = (ROOT / "deploy" / "nightly.sh").read_text()
    for command in ("analyze --traces", "report --db", "annotate --db"):
        assert command in script


# ---- the Dask cluster the nightly job classifies on (docs/scale-out.md) ---------------------------------

CITELINE_SERVICES = ("dask-scheduler", "dask-worker", "citeline-nightly")


def _option(command: list[str], name: str) -> str:
    """The value after ``name`` in an argv list (each option given once)."""
    assert command.count(name) == 1, f"{name} given {command.count(name)} times in {command}"
    return command[command.index(name) + 1]


def _health_port(svc: dict[str, Any]) -> int:
    (url,) = re.findall(r"http://localhost:(\d+)/health", " ".join(svc["healthcheck"]["test"]))
    return int(url)


def test_scheduler_and_two_one_thread_workers() -> None:
    services = _compose()["services"]
    scheduler, worker = services["dask-scheduler"], services["dask-worker"]
    assert scheduler["entrypoint"] == ["dask"]
    assert scheduler["command"] == ["scheduler", "--port", "8786", "--dashboard-address", ":8787"]
    assert worker["entrypoint"] == ["dask"]
    assert worker["command"] == [
        "worker",
        "tcp://dask-scheduler:8786",
        "--nthreads",
        "1",
        "--nworkers",
        "1",
        "--dashboard-address",
        ":8789",
    ]
    assert worker["deploy"]["replicas"] == 2
    # one process of one thread per worker container: citeline's text work is CPU-bound Python
    assert _option(worker["command"], "--nthreads") == "1"
    assert _option(worker["command"], "--nworkers") == "1"
    # the workers dial the scheduler service on the port it listens on
    assert worker["command"][1] == f"tcp://dask-scheduler:{_option(scheduler['command'], '--port')}"
    # each healthcheck asks its own process's HTTP server (distributed serves /health without bokeh)
    assert _health_port(scheduler) == int(_option(scheduler["command"], "--dashboard-address").lstrip(":")) == 8787
    assert _health_port(worker) == int(_option(worker["command"], "--dashboard-address").lstrip(":")) == 8789
    assert worker["depends_on"] == {"dask-scheduler": {"condition": "service_healthy"}}
    job = services["citeline-nightly"]
    assert job["depends_on"]["dask-scheduler"] == {"condition": "service_healthy"}
    assert job["depends_on"]["dask-worker"] == {"condition": "service_healthy"}
    assert job["environment"]["CITELINE_SCHEDULER"] == "tcp://dask-scheduler:8786"


def test_citeline_services_run_one_image_with_dask() -> None:
    services = _compose()["services"]
    # one build, one tag: the driver and every worker run the same citeline and dask
    for name in CITELINE_SERVICES:
        assert services[name]["build"] == ".", name
        assert services[name]["image"] == f"citeline:{version('citeline')}", name
    docker = (ROOT / "Dockerfile").read_text()
    assert re.findall(r"pip install [^&\n]*", docker) == ['pip install --no-cache-dir ".[dask]" ']
    dask_extra = [r for r in requires("citeline") or [] if r.endswith('extra == "dask"')]
    assert [r.split(";")[0].strip() for r in dask_extra] == ["dask[distributed]>=2024.1"]


def _mount(entry: str) -> tuple[str, str, bool]:
    source, target, *mode = entry.split(":")
    return source, target, mode == ["ro"]


def test_workers_mount_every_path_they_read_where_the_job_does() -> None:
    services = _compose()["services"]
    job, worker = services["citeline-nightly"], services["dask-worker"]
    env = job["environment"]
    job_mounts = {_mount(m)[1]: _mount(m) for m in job["volumes"]}
    worker_mounts = {_mount(m)[1]: _mount(m) for m in worker["volumes"]}
    # map tasks open the trace files by the paths the job lists (scaleout/plan.inputs): the same volume at the
    # same path, read-only; the gold set is shipped by the job as bytes and the store stays on the job
    read_by_workers = [env["CITELINE_TRACES"]]
    for path in read_by_workers:
        (target,) = [t for t in job_mounts if path == t or path.startswith(t.rstrip("/") + "/")]
        assert worker_mounts[target] == job_mounts[target] == ("traces", "/traces", True)
    assert set(worker_mounts) == {"/traces"}
    assert "volumes" not in services["dask-scheduler"]
    for key in ("CITELINE_GOLD", "CITELINE_DB"):
        assert not any(env[key].startswith(t + "/") for t in worker_mounts), key


def test_no_secrets_in_the_compose_file() -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    assert not re.search(r"(?i)(secret|password|token|api_key|access_key)\s*[:=]", text)


# ---- deploy/nightly.sh, run with a stand-in citeline that records its argv -----------------------------

STUB = """#!{python}
import json, os, sys
with open(os.environ["STUB_LOG"], "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:2] == ["analyze"]:
    print("{{}}")
"""


def _nightly(tmp_path: Path, **env: str) -> list[list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    stub = bin_dir / "citeline"
    stub.write_text(STUB.format(python=sys.executable))
    stub.chmod(0o755)
    log = tmp_path / "argv.jsonl"
    base = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "STUB_LOG": str(log),
        "CITELINE_TRACES": str(tmp_path / "traces"),
        "CITELINE_GOLD": str(tmp_path / "gold.yaml"),
        "CITELINE_DB": str(tmp_path / "store.duckdb"),
        "CITELINE_REPORT": str(tmp_path / "report.html"),
    }
    done = subprocess.run(
        ["bash", str(ROOT / "deploy" / "nightly.sh"), "--once"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**base, **env},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((tmp_path / "report.json").read_text()) == {}  # analyze's stdout, where the script puts it
    return [json.loads(line) for line in log.read_text().splitlines()]


def _analyze_argv(tmp_path: Path, *engine: str) -> list[str]:
    return [
        "analyze",
        "--traces",
        str(tmp_path / "traces"),
        "--gold",
        str(tmp_path / "gold.yaml"),
        "--db",
        str(tmp_path / "store.duckdb"),
        "--quiet",
        *engine,
        "--format",
        "json",
    ]


def test_nightly_runs_in_one_process_without_a_scheduler(tmp_path: Path) -> None:
    calls = _nightly(tmp_path)
    assert calls == [
        _analyze_argv(tmp_path),
        ["report", "--db", str(tmp_path / "store.duckdb"), "--format", "html", "--out", str(tmp_path / "report.html")],
    ]


@pytest.mark.parametrize(
    ("extra", "engine"),
    [
        ({}, ["--engine", "dask", "--scheduler", "tcp://dask-scheduler:8786"]),
        (
            {"CITELINE_PARTITIONS": "16"},
            ["--engine", "dask", "--scheduler", "tcp://dask-scheduler:8786", "--partitions", "16"],
        ),
    ],
)
def test_nightly_with_the_compose_environment_runs_on_the_scheduler(
    tmp_path: Path, extra: dict[str, str], engine: list[str]
) -> None:
    env = {k: str(v) for k, v in _compose()["services"]["citeline-nightly"]["environment"].items()}
    for key in ("CITELINE_TRACES", "CITELINE_GOLD", "CITELINE_DB", "CITELINE_REPORT"):  # the container's paths
        env.pop(key)
    calls = _nightly(tmp_path, **env, **extra)
    db = str(tmp_path / "store.duckdb")
    assert calls == [
        _analyze_argv(tmp_path, *engine),
        [
            "report",
            "--db",
            db,
            "--format",
            "html",
            "--out",
            str(tmp_path / "report.html"),
            "--fail-on",
            "access_violation>0",
        ],
        ["annotate", "--db", db, "--phoenix", "http://phoenix:6006"],
    ]


def test_dask_workers_run_with_the_worker_settings_citeline_uses() -> None:
    """The compose workers' environment, read as Dask reads it, is WORKER_CONFIG: no profiler, a 1 s tick."""
    needs("dask", "reads the workers' environment as Dask does; also 'citeline[dask]'")
    import dask.config

    from citeline.analyzer.scaleout.cluster import WORKER_CONFIG

    env = {k: str(v) for k, v in _compose()["services"]["dask-worker"]["environment"].items()}
    read = dask.config.collect_env(env)
    assert {k: dask.config.get(k, config=read) for k in WORKER_CONFIG} == WORKER_CONFIG
