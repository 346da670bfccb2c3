"""The `brain` command line."""
