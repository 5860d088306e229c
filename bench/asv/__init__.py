"""asv suites (``nox -s asv``): ``bench_steps`` times and measures the peak memory of the
steps of every registered algorithm (plugins included) × backend; ``bench_utility`` tracks
fixed-seed utility and privacy figures (final ‖∇F‖, test accuracy, realised ε) across
commits.

With ``environment_type: existing`` asv saves results only under ``--set-commit-hash``; it
drops ``PYTHONPATH`` (``ASV_PYTHONPATH=$PWD`` benchmarks a checkout that is not installed)::

    asv machine --yes
    asv run --python=same --quick --show-stderr --set-commit-hash=HEAD
    asv publish                                   # -> .asv/html/index.html
"""
