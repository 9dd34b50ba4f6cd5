"""Inventory: a YAML list of hosts, and its import from ``terraform output -json`` (or OpenTofu).

An inventory file is a list; each item is a host spec plus its ``name`` (``kind`` defaults to
``ssh``)::

    - name: big
      address: 10.0.1.10
      user: ubuntu
      key: ~/.ssh/bench          # a path, relative to this file; never key material
      labels: {instance_type: c5.18xlarge, zone: us-east-1a}

A campaign uses it with ``inventory: hosts.yaml``. Terraform's output must be a map of name →
object (or a list of objects with ``name``); see docs/hosts.md for the shape.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import Field, TypeAdapter, ValidationError

from netfleet.errors import InputError, SpecError
from netfleet.spec.common import LABEL_KEY, NAME
from netfleet.spec.models import LocalHostSpec, NetnsHostSpec
from netfleet.spec.ssh import SshHostSpec
from netfleet.spec.yamlsrc import LineMap, load_yaml, problems_from

AnyHost = LocalHostSpec | NetnsHostSpec | SshHostSpec
#: machines that exist already (kind aws hosts are launched per campaign from its cloud block)
_HOST: TypeAdapter[AnyHost] = TypeAdapter(Annotated[AnyHost, Field(discriminator="kind")])

#: the output ``import-terraform`` reads unless told otherwise
DEFAULT_OUTPUT = "netfleet_hosts"
#: keys of a Terraform host object that are host-spec fields (everything else becomes a label)
HOST_KEYS = frozenset(SshHostSpec.model_fields) - {"labels"}
#: common Terraform attribute names, mapped to ours
ALIASES = {"private_ip": "address", "public_ip": "ssh_address"}
#: refuse anything that smells of a secret: netfleet never stores one
SECRET = re.compile(r"passw|secret|token|private_key|credential", re.IGNORECASE)


def load_inventory(path: str | Path) -> dict[str, AnyHost]:
    """Read and validate an inventory file: host name → host spec. SpecError names the item,
    field and line of every problem."""
    data, lines = load_yaml(path)
    file = str(path)
    if not isinstance(data, list):
        raise SpecError(
            f"{file}: an inventory is a YAML list of hosts",
            file=file,
            problems=[("<top>", 1, "start each host with '- name: NAME'")],
        )
    hosts: dict[str, AnyHost] = {}
    problems: list[tuple[str, int | None, str]] = []
    for i, item in enumerate(data):
        line = lines.get((i,))
        if not isinstance(item, dict):
            problems.append((str(i), line, "each host is a mapping with 'name' and 'address'"))
            continue
        name = item.get("name")
        if not isinstance(name, str) or not re.match(NAME, name):
            problems.append((f"{i}.name", line, "give each host a name: letters, digits, . _ -"))
            continue
        if name in hosts:
            problems.append((f"{i}.name", line, f"host {name!r} is listed twice: keep one"))
            continue
        body = {k: v for k, v in item.items() if k != "name"}
        body.setdefault("kind", "ssh")
        try:
            hosts[name] = _HOST.validate_python(body, context={"file": file})
        except ValidationError as exc:
            local: LineMap = {k[1:]: v for k, v in lines.items() if k[:1] == (i,)}
            problems += [
                (f"{i}.{where}", at or line, f"{msg} (host {name})")
                for where, at, msg in problems_from(exc, local)
            ]
    if problems:
        raise SpecError(f"{file}: invalid inventory", file=file, problems=problems)
    return hosts


def inventory_from_terraform(doc: Any, output: str | None = None) -> list[dict[str, Any]]:
    """Inventory entries from the JSON of ``terraform output -json`` (``tofu output -json``).

    ``output`` names the output to read (default ``netfleet_hosts``, or the only output there
    is). Its value is a map name → object or a list of objects with ``name``. Object keys that
    are host fields (``address``, ``ssh_address``, ``user``, ``port``, ``key``, ``jump``,
    ``sudo``…; ``private_ip``/``public_ip`` as aliases) are kept; ``labels`` and every other
    scalar become labels. Raises InputError, naming the fix."""
    value = _output_value(doc, output)
    if isinstance(value, dict):
        items = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, list):
        items = [(str(v.get("name")) if isinstance(v, dict) else "", v) for v in value]
    else:
        raise InputError(
            "the Terraform output must be a map of host name → object, or a list of objects",
            hint="see docs/hosts.md for the expected shape",
        )
    entries = [_entry(name, obj) for name, obj in items]
    entries.sort(key=lambda e: e["name"])
    _validate(entries)
    return entries


def inventory_yaml(entries: list[dict[str, Any]], source: str = "") -> str:
    """The inventory file text for ``entries`` (as written by ``import-terraform``)."""
    head = f"# netfleet inventory, imported from {source}\n" if source else ""
    body = yaml.safe_dump(entries, sort_keys=False, default_flow_style=None, allow_unicode=True)
    return head + body


def _output_value(doc: Any, output: str | None) -> Any:
    if not isinstance(doc, dict) or not all(isinstance(v, dict) for v in doc.values()):
        raise InputError(
            "this is not the JSON of `terraform output -json`",
            hint="run: terraform output -json > outputs.json (or tofu output -json)",
        )
    if output is None:
        if DEFAULT_OUTPUT in doc:
            output = DEFAULT_OUTPUT
        elif len(doc) == 1:
            output = next(iter(doc))
        else:
            raise InputError(
                f"which output lists the hosts? found: {', '.join(sorted(doc)) or 'none'}",
                hint=f"name it {DEFAULT_OUTPUT!r} in Terraform, or pass --output NAME",
            )
    if output not in doc:
        raise InputError(
            f"no output {output!r} in the Terraform JSON (found: {', '.join(sorted(doc))})",
            hint="pass --output with one of those names",
        )
    if "value" not in doc[output]:
        raise InputError(f"output {output!r} has no 'value'", hint="run terraform apply first")
    return doc[output]["value"]


def _entry(name: str, obj: Any) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise InputError(
            f"host {name!r}: expected an object such as {{address: ..., user: ...}}",
            hint="see docs/hosts.md for the expected shape",
        )
    fields: dict[str, Any] = {}
    labels: dict[str, Any] = dict(obj.get("labels") or {})
    for raw_key, value in obj.items():
        key = str(raw_key)
        if SECRET.search(key):
            raise InputError(
                f"host {name!r}: {key!r} looks like a secret; netfleet never stores secrets",
                hint="drop it from the output; SSH uses key: PATH (a file) or ssh-agent",
            )
        if key in ("name", "labels") or value is None:
            continue
        key = ALIASES.get(key) or key
        if key in HOST_KEYS:
            fields[key] = value
        elif isinstance(value, str | int | float | bool) and re.match(LABEL_KEY, key):
            labels[key] = value
        else:
            raise InputError(
                f"host {name!r}: {key!r} is neither a host field nor a scalar label",
                hint="put structured data under 'labels' as scalars, or leave it out",
            )
    if "address" not in fields and "ssh_address" in fields:
        fields["address"] = fields.pop("ssh_address")
    entry: dict[str, Any] = {"name": name}
    entry.update(sorted(fields.items(), key=lambda kv: _FIELD_ORDER.get(kv[0], 99)))
    if labels:
        entry["labels"] = dict(sorted(labels.items()))
    return entry


_FIELD_ORDER = {k: i for i, k in enumerate(["kind", "address", "ssh_address", "user", "port"])}


def _validate(entries: list[dict[str, Any]]) -> None:
    problems = []
    seen: set[str] = set()
    for e in entries:
        name = e["name"]
        if not re.match(NAME, name) or name in seen:
            problems.append(f"host name {name!r}: unique, letters, digits, '.', '_', '-'")
        seen.add(name)
        try:
            _HOST.validate_python({"kind": "ssh", **{k: v for k, v in e.items() if k != "name"}})
        except ValidationError as exc:
            for where, _line, msg in problems_from(exc, {}):
                problems.append(f"host {name!r}: {where}: {msg}")
    if problems:
        raise InputError(
            "the Terraform output does not make a valid inventory:\n  " + "\n  ".join(problems),
            hint="fix the output (see docs/hosts.md for the expected shape)",
        )


def read_terraform_json(path: str) -> Any:
    """The parsed JSON of ``terraform output -json`` from a file, or stdin for ``-``."""
    import sys

    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})", hint="check the path") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}: not JSON ({exc.msg}, line {exc.lineno})",
            hint="give the output of: terraform output -json",
        ) from exc
