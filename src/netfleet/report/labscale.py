"""A scaled lab's figures and the cloud figures they stand for, side by side (issue 27).

A lab profile with ``scale: {rate: 0.05, time: 0.05}`` runs at 1/20 of the cloud's rates and
durations; its runs carry the labels ``lab_scale`` (lab rate ÷ cloud rate) and
``lab_time_scale`` (lab duration ÷ cloud duration). Every number derived from such a run is
the lab's; the cloud figure is: a rate ÷ rate scale, a duration ÷ time scale, a volume (a
credit bucket, rate × time) ÷ (rate scale × time scale). Money is never scaled: a price is
the cloud's, so $ per Gbit/s divides it by the *cloud* rate.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from netfleet.engines.burstable import lab_scale
from netfleet.report.numbers import sig

if TYPE_CHECKING:  # (the analysis package, and its ruptures, only where a run is analysed)
    from netfleet.analysis.calculator import Answer

#: the label of a lab whose rates are a seed's goodput used as shaper (wire) rates
BASIS_LABEL = "lab_rate_basis"


def goodput_basis_note(what: str) -> str:
    """What a lab built from a seed's goodput gives when compared with that seed (issue 36:
    seed 000's Fargate tiers land 4.4 % under the seed's figures)."""
    from netfleet.units import GOODPUT_PER_WIRE

    return (
        f"{what}: the lab profile's rates are a seed's goodput used as shaper (wire) rates "
        f"(label {BASIS_LABEL}=goodput), so the goodput measured here, and the cloud figures "
        f"derived from it, land under the seed's by the TCP/IP overhead: × {GOODPUT_PER_WIRE:.3f} "
        f"at MTU 1500 ({(1 - GOODPUT_PER_WIRE) * 100:.1f} % under) — that gap is the profile's, "
        "not a finding."
    )


def goodput_basis_runs(catalog_dir: str | os.PathLike[str], campaign: str | None = None) -> int:
    """How many runs of the catalog (of ``campaign``) a lab built from a seed's goodput
    measured (label :data:`BASIS_LABEL`)."""
    from netfleet.catalog.views import connect

    con = connect(catalog_dir)
    try:
        sql = "SELECT count(*) FROM runs WHERE json_extract_string(labels, ?) = 'goodput'"
        if campaign:
            sql += " AND campaign = ?"
        params = [f"$.{BASIS_LABEL}", *([campaign] if campaign else [])]
        return int(con.execute(sql, params).fetchone()[0])  # type: ignore[index]
    finally:
        con.close()


@dataclass(frozen=True)
class LabScale:
    rate: float
    time: float
    #: "goodput": the profile's rates are a seed's goodput used as wire rates
    basis: str = "wire"

    def cloud_rate(self, bps: float) -> float:
        return bps / self.rate

    def cloud_seconds(self, seconds: float) -> float:
        return seconds / self.time

    def cloud_bits(self, bits: float) -> float:
        return bits / (self.rate * self.time)

    def cloud_factor(self, unit: str) -> float:
        """What a lab figure in ``unit`` (``rate``, ``credit`` — bits —, ``s``, ``ratio``) is
        multiplied by to give the cloud's."""
        return {"rate": 1 / self.rate, "credit": 1 / (self.rate * self.time)}.get(
            unit, 1 / self.time if unit == "s" else 1.0
        )

    def label(self) -> str:
        if self.time == self.rate:
            return f"lab ×{self.rate:g}"
        return f"lab ×{self.rate:g} (time ×{self.time:g})"

    def note(self, what: str) -> str:
        """The sentence saying how ``what``'s cloud figures were derived."""
        return (
            f"{what}: measured in a lab at ×{self.rate:g} of the cloud's rates and "
            f"×{self.time:g} of its durations; cloud figures = rates ÷ {self.rate:g}, "
            f"times ÷ {self.time:g}, credit (rate × time) ÷ {self.rate * self.time:g}."
        ) + (" " + goodput_basis_note(what) if self.basis == "goodput" else "")


def cloud_answer(answer: Answer, scale: LabScale) -> Answer:
    """A calculator answer from a scaled lab's figures with the cloud figure beside it."""
    cloud = answer.value.scaled(scale.cloud_factor(answer.unit))
    return replace(answer, cloud=cloud, lab_scale=(scale.rate, scale.time))


def scale_of(labels: Mapping[str, Any]) -> LabScale | None:
    """The lab scale a run's labels give (:func:`netfleet.engines.burstable.lab_scale`), or
    None (not a scaled lab, or a scale of 1)."""
    found = lab_scale(labels)
    if found is None:
        return None
    basis = "goodput" if labels.get(BASIS_LABEL) == "goodput" else "wire"
    return LabScale(*found, basis)


def common_scale(all_labels: Iterable[Mapping[str, Any]]) -> LabScale | None:
    """The one lab scale of several runs; None when unscaled or when they differ (mixed
    scales have no single cloud figure)."""
    found = {scale_of(labels) for labels in all_labels}
    return found.pop() if len(found) == 1 else None


def rate_text(bps: float, scale: LabScale | None) -> str:
    """``383 Mbit/s (lab) = 7.66 Gbit/s (cloud)``, or just the rate when unscaled."""
    if scale is None:
        return _rate(bps)
    return f"{_rate(scale.cloud_rate(bps))} in the cloud (lab {_rate(bps)})"


def seconds_text(seconds: float, scale: LabScale | None) -> str:
    if scale is None:
        return f"{sig(seconds)} s"
    return f"{sig(scale.cloud_seconds(seconds))} s in the cloud (lab {sig(seconds)} s)"


def bits_text(bits: float, scale: LabScale | None) -> str:
    if scale is None:
        return _size(bits)
    return f"{_size(scale.cloud_bits(bits))} in the cloud (lab {_size(bits)})"


def _rate(bps: float) -> str:
    return f"{_size(bps)}/s"


def _size(bits: float) -> str:
    if bits >= 1e9:
        return f"{sig(bits / 1e9)} Gbit"
    return f"{sig(bits / 1e6)} Mbit"
