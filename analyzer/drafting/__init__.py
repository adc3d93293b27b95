"""Drafting gold from what already exists: real traces, a Phoenix dataset, users' feedback."""
