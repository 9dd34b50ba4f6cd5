"""moto's instances booted as Debian userlands (:mod:`.userland`), through netfleet's plugin seam.

``NETFLEET_PLUGINS=netfleet_sim.userland_plugin`` in the controller's environment, with

* ``NETFLEET_USERLAND_DIR`` — where each booted instance is recorded (``<id>.json``, written
  before the instance boots, so a test can shut down what a killed controller left);
* ``NETFLEET_USERLAND_BRIDGE`` / ``NETFLEET_USERLAND_NET`` — the bridge (made by the caller)
  and its /24 (the bridge holds ``.1``; instances get ``.10`` on).

RunInstances: each instance boots in the background from the user-data the call carried, with
the key pair's public key as the default user's ``authorized_keys`` (what cloud-init reads from
the instance metadata); DescribeInstances and RunInstances report its address as both private
and public IP; TerminateInstances shuts it down. Booting takes what apt takes: like AWS, the
instance is ``running`` before sshd answers.
"""

from __future__ import annotations

import base64
import fcntl
import ipaddress
import json
import os
import threading
from pathlib import Path
from typing import Any

from netfleet.plugins import Registry
from netfleet_sim import userland

DIR_ENV = "NETFLEET_USERLAND_DIR"
BRIDGE_ENV = "NETFLEET_USERLAND_BRIDGE"
NET_ENV = "NETFLEET_USERLAND_NET"

_keys: dict[str, str] = {}  #: key pair name → public key (ImportKeyPair)
_lock = threading.Lock()


def state_dir() -> Path:
    return Path(os.environ[DIR_ENV])


def records() -> dict[str, dict[str, Any]]:
    out = {}
    d = state_dir()
    if d.is_dir():
        for p in d.glob("i-*.json"):
            try:
                out[p.stem] = json.loads(p.read_text())
            except (OSError, ValueError):
                continue
    return out


def _allocate(instance_id: str) -> userland.Instance:
    d = state_dir()
    d.mkdir(parents=True, exist_ok=True)
    net = ipaddress.ip_network(os.environ[NET_ENV])
    with open(d / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        used = {r["address"] for r in records().values()}
        address = next(str(a) for a in list(net.hosts())[9:] if str(a) not in used)
        tag = instance_id.removeprefix("i-")[-8:]
        inst = userland.Instance(
            instance_id=instance_id,
            namespace=f"nf-ul-{tag}",
            address=address,
            root=d / tag / "root",
            work=d / tag / "layer",
        )
        (d / f"{instance_id}.json").write_text(json.dumps(inst.record()))
    return inst


def _boot(inst: userland.Instance, user_data: str, key: str) -> None:
    net = ipaddress.ip_network(os.environ[NET_ENV])
    gateway = str(next(net.hosts()))
    log_path = state_dir() / f"{inst.instance_id}.boot.log"
    try:
        image = userland.ensure_image()
        log = userland.boot(
            image, inst, user_data, key, os.environ[BRIDGE_ENV], net.prefixlen, gateway
        )
    except Exception as exc:
        log = f"boot failed: {exc}"
    log_path.write_text(log)
    (state_dir() / f"{inst.instance_id}.json").write_text(json.dumps(inst.record()))


def _import_key(params: dict[str, Any], **_: Any) -> None:
    material = params.get("PublicKeyMaterial", b"")
    if isinstance(material, bytes):
        material = material.decode()
    _keys[str(params.get("KeyName"))] = str(material)


def _run_params(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    data = params.get("UserData", "")
    if isinstance(data, bytes):
        data = data.decode()
    context["netfleet_userland"] = (str(data), str(params.get("KeyName", "")))


def _launched(parsed: Any, context: dict[str, Any], **_: Any) -> None:
    if not isinstance(parsed, dict) or "Instances" not in parsed:
        return
    user_data, key_name = context.get("netfleet_userland", ("", ""))
    try:  # botocore base64-encodes RunInstances' UserData before this context saw it? no: raw
        decoded = base64.b64decode(user_data, validate=True).decode()
        if decoded.startswith("#cloud-config"):
            user_data = decoded
    except ValueError:
        pass
    for inst in parsed["Instances"]:
        booted = _allocate(inst["InstanceId"])
        args = (booted, user_data, _keys.get(key_name, ""))
        threading.Thread(target=_boot, args=args, daemon=True).start()
    _addresses(parsed)


def _addresses(parsed: Any, **_: Any) -> None:
    if not isinstance(parsed, dict):
        return
    known = records()
    instances = list(parsed.get("Instances", []))
    for res in parsed.get("Reservations", []):
        instances += res.get("Instances", [])
    for inst in instances:
        rec = known.get(inst.get("InstanceId", ""))
        if rec:
            inst["PrivateIpAddress"] = inst["PublicIpAddress"] = rec["address"]


def _terminated(parsed: Any, **_: Any) -> None:
    if not isinstance(parsed, dict):
        return
    known = records()
    for item in parsed.get("TerminatingInstances", []):
        rec = known.get(item.get("InstanceId", ""))
        if rec:
            userland.shut_down(rec)
            (state_dir() / f"{rec['instance_id']}.json").unlink(missing_ok=True)


def shut_down_all(directory: Path) -> int:
    """What a test calls at the end: every userland recorded in ``directory`` shut down."""
    n = 0
    for p in directory.glob("i-*.json"):
        try:
            userland.shut_down(json.loads(p.read_text()))
        except (OSError, ValueError):
            continue
        p.unlink(missing_ok=True)
        n += 1
    return n


def install(registry: Registry) -> None:
    for env in (DIR_ENV, BRIDGE_ENV, NET_ENV):
        if not os.environ.get(env):
            raise RuntimeError(f"netfleet_sim.userland_plugin needs {env}")
    registry.sessions.append(register)


def register(session: Any) -> None:
    session.register("before-parameter-build.ec2.ImportKeyPair", _import_key)
    session.register("before-parameter-build.ec2.RunInstances", _run_params)
    session.register("after-call.ec2.RunInstances", _launched)
    session.register("after-call.ec2.DescribeInstances", _addresses)
    session.register("after-call.ec2.TerminateInstances", _terminated)
