"""Algorithms: HOW to optimise privately. One interface, one module per paper.

Importing this package registers every built-in algorithm in :data:`ALGORITHMS`; outside
code registers its own with :func:`register_algorithm` (see :mod:`problems.registry`).
"""

from algorithms import ada_dp_spider as _ada_dp_spider
from algorithms import dp_rgda as _dp_rgda
from algorithms import dp_sgd as _dp_sgd
from algorithms import dp_sgda as _dp_sgda
from algorithms import dp_spider_at as _dp_spider_at
from algorithms import gauss_psgd as _gauss_psgd
from algorithms import noisy_sgd as _noisy_sgd
from algorithms import prisma as _prisma
from algorithms import private_diff as _private_diff
from algorithms import sgd as _sgd
from algorithms import spider_sosp as _spider_sosp
from algorithms.base import (
    ALGORITHMS,
    Algorithm,
    Extras,
    NoExtras,
    Plan,
    PrivacyTarget,
    Rate,
    Step,
    Trace,
    get_algorithm,
    register_algorithm,
)

__all__ = ["ALGORITHMS", "Algorithm", "Extras", "NoExtras", "Plan", "PrivacyTarget", "Rate",
           "Step", "Trace", "get_algorithm", "register_algorithm"]

del (_ada_dp_spider, _dp_rgda, _dp_sgd, _dp_sgda, _dp_spider_at, _gauss_psgd, _noisy_sgd, _prisma,
     _private_diff, _sgd, _spider_sosp)
