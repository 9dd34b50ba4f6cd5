"""The library under the CLI: one typed function per thing ``netfleet`` does.

Every command of the CLI parses its arguments, calls one of these and renders what it returns;
a notebook, a script or a scheduler calls the same functions and gets the same answers (and the
same guards: :func:`run` and :func:`cloud_up` refuse a cloud campaign above its spending limit
before anything is launched). Options are keyword-only and named like the CLI's flags
(``--results`` → ``results=``, ``--max-cost`` → ``max_cost=``); ``results`` and ``catalog``
default as on the command line (``$NETFLEET_RESULTS`` / ``$NETFLEET_CATALOG``, else
``./results`` and ``./catalog``). Errors are :mod:`netfleet.errors` types with a hint and an
exit status. Each function imports what it needs when called, so ``import netfleet.api`` is
cheap. docs/api.md maps each command to its function and shows two notebook sessions;
docs/api-reference.md lists every signature.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# each name is imported from its module on first use: ``api.cheatsheet`` loads ``_catalog``,
# not the cloud's or the analysis' facade (a no-op import and its cached cheat sheet are a
# start-up's worth of work, issue 26)

#: each public function and constant of the facade → the module of it that defines it
_HOME = {
    "CALC_GROUP_KEYS": "netfleet.api._analysis",
    "COMPARE_METRICS": "netfleet.api._analysis",
    "Analysis": "netfleet.api._analysis",
    "analyze": "netfleet.api._analysis",
    "calc": "netfleet.api._analysis",
    "compare": "netfleet.api._analysis",
    "measured_bucket": "netfleet.api._analysis",
    "RunOutcome": "netfleet.api._campaign",
    "run": "netfleet.api._campaign",
    "run_summary": "netfleet.api._campaign",
    "RUN_LINE_LEGEND": "netfleet.api._campaign",
    "cheatsheet": "netfleet.api._catalog",
    "export": "netfleet.api._catalog",
    "sql": "netfleet.api._catalog",
    "advice": "netfleet.api._checks",
    "doctor": "netfleet.api._checks",
    "CLOUD_DIR_ENV": "netfleet.api._cloud",
    "CloudPrices": "netfleet.api._cloud",
    "CloudUp": "netfleet.api._cloud",
    "PricesRefreshed": "netfleet.api._cloud",
    "cloud_destroy": "netfleet.api._cloud",
    "cloud_plan": "netfleet.api._cloud",
    "cloud_prices": "netfleet.api._cloud",
    "cloud_prices_refresh": "netfleet.api._cloud",
    "cloud_reap": "netfleet.api._cloud",
    "cloud_up": "netfleet.api._cloud",
    "load_cloud_spec": "netfleet.api._cloud",
    "Selftest": "netfleet.api._selftest",
    "cloud_selftest": "netfleet.api._selftest",
    "DemoOutcome": "netfleet.api._demo",
    "SteadyCheck": "netfleet.api._demo",
    "demo": "netfleet.api._demo",
    "inventory_check": "netfleet.api._inventory",
    "inventory_import_terraform": "netfleet.api._inventory",
    "inventory_show": "netfleet.api._inventory",
    "LabUp": "netfleet.api._lab",
    "lab_down": "netfleet.api._lab",
    "lab_profiles": "netfleet.api._lab",
    "lab_status": "netfleet.api._lab",
    "lab_up": "netfleet.api._lab",
    "catalog_dir": "netfleet.api._paths",
    "results_url": "netfleet.api._paths",
    "report_html": "netfleet.api._report",
    "report_loaded": "netfleet.api._report",
    "report_pps": "netfleet.api._report",
    "report_price": "netfleet.api._report",
    "report_topology": "netfleet.api._report",
    "IMPORT_PRESETS": "netfleet.api._results",
    "IMPORT_SIDES": "netfleet.api._results",
    "import_files": "netfleet.api._results",
    "ingest": "netfleet.api._results",
    "register": "netfleet.api._results",
    "verify": "netfleet.api._results",
    "plan": "netfleet.api._spec",
    "schema": "netfleet.api._spec",
    "watch": "netfleet.api._watch",
}

if TYPE_CHECKING:
    from netfleet.api._analysis import (
        CALC_GROUP_KEYS,
        COMPARE_METRICS,
        Analysis,
        analyze,
        calc,
        compare,
        measured_bucket,
    )
    from netfleet.api._campaign import RUN_LINE_LEGEND, RunOutcome, run, run_summary
    from netfleet.api._catalog import cheatsheet, export, sql
    from netfleet.api._checks import advice, doctor
    from netfleet.api._cloud import (
        CLOUD_DIR_ENV,
        CloudPrices,
        CloudUp,
        PricesRefreshed,
        cloud_destroy,
        cloud_plan,
        cloud_prices,
        cloud_prices_refresh,
        cloud_reap,
        cloud_up,
        load_cloud_spec,
    )
    from netfleet.api._demo import DemoOutcome, SteadyCheck, demo
    from netfleet.api._inventory import inventory_check, inventory_import_terraform, inventory_show
    from netfleet.api._lab import LabUp, lab_down, lab_profiles, lab_status, lab_up
    from netfleet.api._paths import catalog_dir, results_url
    from netfleet.api._report import (
        report_html,
        report_loaded,
        report_pps,
        report_price,
        report_topology,
    )
    from netfleet.api._results import (
        IMPORT_PRESETS,
        IMPORT_SIDES,
        import_files,
        ingest,
        register,
        verify,
    )
    from netfleet.api._selftest import Selftest, cloud_selftest
    from netfleet.api._spec import plan, schema
    from netfleet.api._watch import watch
    from netfleet.catalog.register import RegisterReport as RegisterReport
    from netfleet.catalog.verify import VerifyReport as VerifyReport
    from netfleet.plan.matrix import PlannedRun as PlannedRun
    from netfleet.plan.summary import Plan as Plan
    from netfleet.runner.events import Reporter as Reporter
    from netfleet.store.envelope import Envelope as Envelope
    from netfleet.store.imports import ImportReport as ImportReport
    from netfleet.tabular import Tabular as Tabular

#: the types callers meet in results and callbacks, imported on first use
_TYPES = {
    "Envelope": "netfleet.store.envelope",
    "ImportReport": "netfleet.store.imports",
    "RegisterReport": "netfleet.catalog.register",
    "VerifyReport": "netfleet.catalog.verify",
    "Plan": "netfleet.plan.summary",
    "PlannedRun": "netfleet.plan.matrix",
    "Reporter": "netfleet.runner.events",
    "Tabular": "netfleet.tabular",
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name) or _TYPES.get(name)
    if module is None:
        raise AttributeError(f"module 'netfleet.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    if name in _HOME:
        globals()[name] = value
    return value


__all__ = [
    "CALC_GROUP_KEYS",
    "CLOUD_DIR_ENV",
    "COMPARE_METRICS",
    "IMPORT_PRESETS",
    "IMPORT_SIDES",
    "RUN_LINE_LEGEND",
    "Analysis",
    "CloudPrices",
    "CloudUp",
    "DemoOutcome",
    "LabUp",
    "PricesRefreshed",
    "RunOutcome",
    "Selftest",
    "SteadyCheck",
    "advice",
    "analyze",
    "calc",
    "catalog_dir",
    "cheatsheet",
    "cloud_destroy",
    "cloud_plan",
    "cloud_prices",
    "cloud_prices_refresh",
    "cloud_reap",
    "cloud_selftest",
    "cloud_up",
    "compare",
    "demo",
    "doctor",
    "export",
    "import_files",
    "ingest",
    "inventory_check",
    "inventory_import_terraform",
    "inventory_show",
    "lab_down",
    "lab_profiles",
    "lab_status",
    "lab_up",
    "load_cloud_spec",
    "measured_bucket",
    "plan",
    "register",
    "report_html",
    "report_loaded",
    "report_pps",
    "report_price",
    "report_topology",
    "results_url",
    "run",
    "run_summary",
    "schema",
    "sql",
    "verify",
    "watch",
]
