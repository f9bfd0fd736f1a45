"""Options of the redis driver."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from sixnines.drivers.base import LoginOptions


class RedisOptions(LoginOptions):
    """`username` is an ACL user (Redis 6+); without it AUTH uses the default user."""

    mode: Literal["pubsub", "streams"] = "pubsub"
    """pubsub: PUBLISH/SUBSCRIBE (nothing stored, a slow subscriber is disconnected by the
    server's client-output-buffer-limit). streams: XADD to a stream, XREAD/XREADGROUP."""
    channel: str = Field("sixnines", min_length=1)
    """The pub/sub channel, or the stream key in streams mode. With several connections
    per agent, one-way lane i uses `<channel>.<i>`; with keys, each key has a channel
    (stream) of its own below its lane's, `<channel>.<key>` (`<channel>.<i>.<key>`); replies
    of round trips use `<channel>.reply.<producer id>`. Left out, each run has a channel of
    its own
    (`<scenario>-<run id>-<suffix>`), whose stream keys are deleted at the end unless the
    system says `keep_resources: true`; a channel named here is used as it is and never
    deleted."""
    db: int = Field(0, ge=0)
    """Database for stream keys (pub/sub channels are global to the server)."""
    stream_maxlen: int = Field(1_000_000, ge=1)
    """streams: XADD trims to about this many entries (MAXLEN ~), so memory stays bounded;
    with several connections, the lanes' streams share it (each keeps its share), and with
    keys each key's stream keeps its lane's share. A reader more than this many entries
    behind loses messages (counted as lost)."""
    group: bool = False
    """streams: read with XREADGROUP through a consumer group of its own per receiver
    connection and XACK each batch (the group is destroyed at close), instead of XREAD."""
    connect_timeout_s: float = Field(10.0, gt=0)
    """Limit on connecting and on each setup command (not on the measured traffic)."""

    @model_validator(mode="after")
    def _consistent(self) -> RedisOptions:
        if self.mode == "pubsub":  # by value: agents receive every field, defaults included
            defaults = type(self).model_fields
            misplaced = [name for name in ("group", "stream_maxlen")
                         if getattr(self, name) != defaults[name].default]
            if misplaced:
                raise ValueError(f"{', '.join(misplaced)} only apply to mode streams")
        return self
