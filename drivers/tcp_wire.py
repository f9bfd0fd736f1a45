"""The sixnines relay's wire format, shared by the tcp driver (drivers/tcp.py) and the
relay itself (drivers/tcp_relay.py).

Every connection opens with an 8-byte hello, `b"SXN"`, a role byte and the frame length
(u32 LE): P publishes, S subscribes, E asks for an echo. The relay answers one byte, `K`,
once the connection is registered. Frames are a u32 LE length followed by the message.
"""

from __future__ import annotations

import struct

MAGIC = b"SXN"
HELLO = struct.Struct("<3scI")
ACK = b"K"
PUBLISH, SUBSCRIBE, ECHO = b"P", b"S", b"E"
LENGTH = struct.Struct("<I")
