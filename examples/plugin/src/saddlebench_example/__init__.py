"""An example saddlebench plugin: one problem (``rosenbrock_sum``) and one algorithm
(``dp_sgd_momentum``), found by saddlebench through this distribution's entry points."""
