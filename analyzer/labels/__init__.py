"""People's labels: a blind sample of a run to label, and a judge's agreement with the labels (calibrate)."""
