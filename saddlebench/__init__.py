"""The composition root: the ``saddlebench`` command (:mod:`saddlebench.cli`), the one
place that reaches across problems ← algorithms ← bench ← reports."""
