"""Partitioned runs on a Dask cluster: the driver and the map and reduce tasks its workers run."""
