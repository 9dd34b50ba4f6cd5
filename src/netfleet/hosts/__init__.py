"""Hosts: where engines run. One module per kind, one line per kind in ``registry``."""

from netfleet.hosts.base import CommandResult, Host, Process
from netfleet.hosts.registry import build_host

__all__ = ["CommandResult", "Host", "Process", "build_host"]
