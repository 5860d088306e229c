"""asv suites: time_/peakmem_/track_ per algorithm × backend (run with `nox -s asv`)."""
