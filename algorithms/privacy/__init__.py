"""Privacy: the release ledger, the mechanism object, accounting and calibration."""

from algorithms.privacy.accounting import Epsilons, calibrate, epsilon, epsilons
from algorithms.privacy.ledger import Batch, Ledger, Mechanism, Release, Round, Sampling

__all__ = [
    "Batch", "Epsilons", "Ledger", "Mechanism", "Release", "Round", "Sampling",
    "calibrate", "epsilon", "epsilons",
]
