"""pytest-benchmark suites for hot kernels (run with `nox -s bench`)."""
