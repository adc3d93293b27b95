"""Reports over a stored run: buckets, funnel, trends, gates; as a table, Markdown, JSON or an HTML page."""
