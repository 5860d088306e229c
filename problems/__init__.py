"""Problems: WHAT is optimised (generators, data, models, oracles).

Importing this package registers every built-in problem in :data:`PROBLEMS`; outside code
registers its own with :func:`register_problem` (see :mod:`problems.registry`).
"""

from problems import supervised as _supervised
from problems import text as _text
from problems import vision as _vision
from problems.base import (
    PROBLEMS,
    DataInfo,
    DataSize,
    Instance,
    Problem,
    get_problem,
    register_problem,
)
from problems.synthetic import matrix_sensing as _matrix_sensing
from problems.synthetic import nc_least_squares as _nc_least_squares
from problems.synthetic import ncsc_double_well as _ncsc_double_well
from problems.synthetic import saddle_chain as _saddle_chain
from problems.synthetic import strict_saddle as _strict_saddle

__all__ = ["PROBLEMS", "DataInfo", "DataSize", "Instance", "Problem", "get_problem",
           "register_problem"]

del (_supervised, _text, _vision, _matrix_sensing, _nc_least_squares, _ncsc_double_well,
     _saddle_chain, _strict_saddle)
