"""Closed-form synthetic problems."""
