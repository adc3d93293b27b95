# The nightly citeline job (see docker-compose.yml and deploy/nightly.sh), and the Dask scheduler
# and workers it classifies on ([dask]: dask.distributed, the same versions on every container).
FROM python:3.11.7-slim-bookworm
WORKDIR /app
COPY pyproject.toml README.md ./
COPY instrumentation ./instrumentation
COPY analyzer ./analyzer
COPY queries ./queries
COPY examples ./examples
RUN pip install --no-cache-dir ".[dask]" && useradd --create-home citeline
COPY deploy/nightly.sh /usr/local/bin/citeline-nightly
USER citeline
ENTRYPOINT ["citeline-nightly"]
