#!/usr/bin/env bash
# The nightly citeline job: analyze the day's trace files against the gold set, write
# the HTML report, push failures to Phoenix as span annotations. Runs once a day at
# CITELINE_SCHEDULE_HOUR (UTC), or once and exits with --once. With CITELINE_SCHEDULER
# (tcp://HOST:PORT) the classification runs as partitions on that Dask cluster, whose workers
# must read CITELINE_TRACES at the same path (docs/scale-out.md); without it, in this process.
set -uo pipefail

: "${CITELINE_TRACES:?folder of OTLP/JSON trace files}"
: "${CITELINE_GOLD:?gold evidence file}"
: "${CITELINE_DB:=citeline.duckdb}"
: "${CITELINE_REPORT:=report.html}"
: "${CITELINE_SCHEDULE_HOUR:=2}"
CITELINE_BIN="${CITELINE_BIN:-citeline}"

run_once() {
    engine=()
    if [ -n "${CITELINE_SCHEDULER:-}" ]; then
        engine=(--engine dask --scheduler "$CITELINE_SCHEDULER")
        [ -n "${CITELINE_PARTITIONS:-}" ] && engine+=(--partitions "$CITELINE_PARTITIONS")
    fi
    echo "citeline nightly: $(date -u +%FT%TZ) analyzing ${CITELINE_TRACES}${CITELINE_SCHEDULER:+ on ${CITELINE_SCHEDULER}}"
    "$CITELINE_BIN" analyze --traces "$CITELINE_TRACES" --gold "$CITELINE_GOLD" --db "$CITELINE_DB" --quiet \
        "${engine[@]}" --format json > "${CITELINE_REPORT%.html}.json" || return 1
    gates=()
    for gate in ${CITELINE_FAIL_ON:-}; do gates+=(--fail-on "$gate"); done
    "$CITELINE_BIN" report --db "$CITELINE_DB" --format html --out "$CITELINE_REPORT" "${gates[@]}"
    status=$?
    if [ -n "${CITELINE_PHOENIX_API:-}" ]; then
        "$CITELINE_BIN" annotate --db "$CITELINE_DB" --phoenix "$CITELINE_PHOENIX_API" || status=1
    fi
    return $status
}

if [ "${1:-}" = "--once" ]; then
    run_once
    exit $?
fi

while true; do
    now=$(date -u +%s)
    next=$(date -u -d "today ${CITELINE_SCHEDULE_HOUR}:00" +%s)
    [ "$next" -le "$now" ] && next=$(date -u -d "tomorrow ${CITELINE_SCHEDULE_HOUR}:00" +%s)
    sleep $((next - now))
    run_once || echo "citeline nightly: the run reported a problem (see above)"
done
