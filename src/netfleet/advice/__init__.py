"""Advice with evidence: what limited a run or a campaign, and what to do about it.

Every item names its evidence (numbers and run ids). Rules read raw envelopes (dicts, as stored),
so advice works right after a run, on a results root, or on a doctor report::

    items = advise(envelopes)                  # per run and across the campaign
    items = advise_doctor(hosts, pairs)        # from netfleet doctor's findings
    items = rules_changed(envelopes)           # provider rules revised since the results
"""

from netfleet.advice.model import Advice
from netfleet.advice.ruledates import rules_changed
from netfleet.advice.rules import advise, advise_doctor

__all__ = ["Advice", "advise", "advise_doctor", "rules_changed"]
