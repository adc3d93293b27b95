"""citeline's SQL: plain .sql files, loaded with importlib.resources."""
