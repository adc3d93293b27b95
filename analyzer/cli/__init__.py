"""The command line (``citeline``): one module per family of commands."""
