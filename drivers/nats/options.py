"""Options of the nats driver."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from sixnines.drivers.base import LoginOptions

_TOKEN = re.compile(r"[^\s.*>]+")  # a subject token without wildcards or whitespace
_NAME = re.compile(r"[A-Za-z0-9_-]+")  # stream names


class NatsOptions(LoginOptions):
    """Options of the nats driver. Secrets only by reference, read at connect time:
    `username` with password_env or password_file, or token_env."""

    subject: str = "sixnines"
    """Base subject (see the module docstring for the subjects derived from it). Left out,
    each run has one of its own (`<scenario>-<run id>-<suffix>`), so no run hears
    another's."""
    mode: Literal["core", "jetstream"] = "core"
    """core: at-most-once pub/sub; jetstream: every publish stored in a stream and acked."""
    stream: str = "sixnines"
    """JetStream stream, created if missing (subject S); an existing stream is used as it
    is if its subjects include S. Left out, each run has a stream of its own
    (`<scenario>-<run id>-<suffix>`), deleted at the end unless the system says
    `keep_resources: true`; one named here is never deleted."""
    storage: Literal["memory", "file"] = "memory"
    """JetStream storage of a stream the driver creates."""
    replicas: int = Field(1, ge=1, le=5)
    """JetStream replicas of a stream the driver creates (a cluster's R3 is 3)."""
    max_bytes: int = Field(1 << 30, ge=-1)
    """Size limit of a stream the driver creates, oldest messages discarded past it (-1:
    unlimited), so a long run cannot exhaust the server's memory or disk."""
    batch: int = Field(1000, ge=1, le=1_000_000)
    """JetStream pull consumer batch: messages requested at a time (another request goes
    out when half are delivered)."""
    token_env: str | None = None
    """Name of the environment variable holding an authentication token."""
    tls_ca_file: str | None = None
    """CA bundle to verify a TLS server with (TLS is used when the server requires it; the
    system's CAs by default)."""

    @field_validator("subject")
    @classmethod
    def _subject(cls, subject: str) -> str:
        if not all(_TOKEN.fullmatch(token) for token in subject.split(".")):
            raise ValueError("a subject is dot-separated tokens without spaces or * and >")
        return subject

    @field_validator("stream")
    @classmethod
    def _stream(cls, stream: str) -> str:
        if not _NAME.fullmatch(stream):
            raise ValueError("a stream name is letters, digits, '-' and '_'")
        return stream

    @model_validator(mode="after")
    def _consistent(self) -> NatsOptions:
        has_password = bool(self.password_env or self.password_file)
        if has_password != bool(self.username):
            raise ValueError("username and a password (password_env or password_file) go "
                             "together")
        if self.token_env and self.username:
            raise ValueError("give username/password or token_env, not both")
        if self.mode == "core":
            fields = type(self).model_fields
            wasted = [name for name in ("stream", "storage", "replicas", "max_bytes", "batch")
                      if getattr(self, name) != fields[name].default]
            if wasted:
                raise ValueError(f"{', '.join(wasted)}: only for mode: jetstream")
        return self
