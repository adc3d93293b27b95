"""citeline.analyzer: traces + gold evidence -> one failure bucket per claim."""
