"""Models as flat-parameter loss functions."""
