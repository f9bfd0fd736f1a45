"""The ground floor: formats every part of sixnines shares — the message header, the
per-message record columns, HDR histogram layout and interval logs, the control protocol,
the vocabulary, run statuses, result files and their checks. It imports nothing else of
sixnines, and every other part may import it (docs/design.md, "Layers")."""
