"""The hub's wire format: a hello, then frames of a 4-byte length and the message."""

import struct

HELLO = struct.Struct("<4scIH")  # magic, role, message size, password length (+ password)
MAGIC = b"HUB1"
PUBLISH, SUBSCRIBE, ECHO = b"P", b"S", b"E"
LENGTH = struct.Struct("<I")
WELCOME, REFUSED = b"+", b"!"
