"""Verdicts out to other systems: OpenTelemetry GenAI evaluation events over OTLP or as OTLP/JSON files."""
