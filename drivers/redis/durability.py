"""What Redis keeps of a message: pub/sub keeps nothing (a push goes to whoever is
subscribed, then it is gone); a stream entry lives in memory and survives a restart only
through the append-only file (`appendonly`, flushed as `appendfsync` says) or an RDB
snapshot (`save`), which the server reports with CONFIG GET."""

from __future__ import annotations

from collections.abc import Mapping

from redis.connection import Connection

from sixnines.drivers.redis.connection import call
from sixnines.drivers.redis.options import RedisOptions
from sixnines.formats.durability import Setting

#: The server settings read back, each with CONFIG GET.
PERSISTENCE = ("appendonly", "appendfsync", "save")


def asked(options: RedisOptions) -> dict[str, Setting]:
    """The driver asks for no persistence (the server's configuration decides it), only
    whether messages are stored at all: streams store them, pub/sub does not."""
    return {"mode": options.mode}


def read_back(conn: Connection, label: str) -> dict[str, Setting]:
    """The server's persistence settings ({name: value}, as CONFIG GET spells them)."""
    settings: dict[str, Setting] = {}
    for name in PERSISTENCE:
        reply = call(conn, label, "CONFIG", "GET", name)
        pairs = dict(zip(reply[::2], reply[1::2], strict=True))
        value = pairs.get(name.encode())
        settings[name] = value.decode() if value is not None else None
    return settings


def label(settings: Mapping[str, Setting]) -> str:
    """"pubsub, not stored"; for streams "aof=<appendfsync>" with the append-only file on,
    else "aof=off, rdb" (snapshots only) or "in memory only"; "persistence unknown" when
    the server was not asked."""
    if settings.get("mode") == "pubsub":
        return "pubsub, not stored"
    if "appendonly" not in settings:
        return "persistence unknown"
    if settings["appendonly"] == "yes":
        return f"aof={settings.get('appendfsync')}"
    return "aof=off, rdb" if settings.get("save") else "in memory only"
