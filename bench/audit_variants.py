"""The releases an algorithm makes only in another configuration (issue 40 item 1: every kind
of release is exercised).

An algorithm's audit runs its default configuration, but some releases exist only when a
parameter says so: dp_spider_at's private selection (``selection: distributed``, tao2025
Algorithm 4, releases held-out gradients and Hessians; ``above_threshold``, AboveThreshold
over the candidates) or noisy_sgd's §3.4 selection (``select``). :func:`release_variants`
finds them from what the algorithm declares, not from a list of names: every value of a
``Literal`` or ``bool`` parameter whose planned ledger holds a release tag the default's lacks.
:func:`variant_checks` runs L0 on each (:func:`~bench.canary.exact_checks`), with the
difference canary where the algorithm clips (its Dirac part reaches gradient releases, its
curvature Hessian and gradient-difference ones) at the problem's smoothness L (a record that
meets it: a Hessian release's sensitivity rests on a per-sample smoothness the algorithm does
not enforce), else the Dirac canary.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Literal

from algorithms import Algorithm, PrivacyTarget
from bench.canary import ExactReport, canary_data, exact_checks, make_audit
from problems import Instance


def release_tags(algorithm: Algorithm, instance: Instance) -> set[str] | None:
    """The release tags of ``algorithm``'s planned ledger on ``instance``'s canary data set
    at σ = 1 (through a plan where the ledger needs one, e.g. spider_sosp's constants; None
    where it cannot plan there)."""
    data = canary_data(instance)
    try:
        try:
            ledger = algorithm.planned_ledger(data, 1.0)
        except RuntimeError:
            ledger = algorithm.plan(data, PrivacyTarget(epsilon=2.0, sigma=1.0)).ledger
    except (NotImplementedError, ValueError):
        return None
    return {release.tag for rnd, _ in ledger.summary() for release in rnd.releases}


def _choices(hint: Any) -> tuple[Any, ...]:
    """The values a ``Literal`` or ``bool`` parameter may take (none for other types)."""
    if typing.get_origin(hint) is Literal:
        return typing.get_args(hint)
    return (True, False) if hint is bool else ()


def release_variants(algorithm: Algorithm, instance: Instance) -> dict[str, Algorithm]:
    """"name=value" → ``algorithm`` with one ``Literal`` or ``bool`` parameter changed, for
    each change whose planned ledger holds a release tag the default's lacks."""
    own = release_tags(algorithm, instance) or set()
    params = algorithm.params
    hints = typing.get_type_hints(type(params))
    variants: dict[str, Algorithm] = {}
    for f in dataclasses.fields(params):
        for value in _choices(hints.get(f.name)):
            if value == getattr(params, f.name):
                continue
            try:
                variant = type(algorithm)(dataclasses.replace(params, **{f.name: value}))
            except ValueError:  # an invalid combination (pydantic's errors are ValueErrors)
                continue
            tags = release_tags(variant, instance)
            if tags is not None and tags - own:
                variants[f"{f.name}={value}"] = variant
    return variants


def variant_checks(algorithm: Algorithm, instance: Instance, target: tuple[float, float],
                   runs: int, seed: int) -> dict[str, ExactReport]:
    """L0 of each of :func:`release_variants` (module doc), by its label."""
    reports = {}
    canary = "dirac" if algorithm.assumes_bound else "difference"
    for label, variant in release_variants(algorithm, instance).items():
        try:
            setup = make_audit(variant, instance, target, canary=canary)
        except ValueError:  # e.g. a variant that needs constants the problem lacks
            continue
        if canary == "difference":
            setup = dataclasses.replace(setup, curvature=float(instance.constants["L"]))
        reports[label] = exact_checks(setup, runs=runs, seed=seed)
    return reports
