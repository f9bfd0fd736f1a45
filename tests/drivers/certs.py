"""Throwaway self-signed certificates for TLS tests (openssl, valid one day)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def self_signed(folder: Path, name: str, alt_name: str) -> tuple[str, str]:
    """(certificate, key) paths for subject `name`, e.g. ("localhost", "DNS:localhost")."""
    cert, key = str(folder / "cert.pem"), str(folder / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", f"/CN={name}", "-addext",
                    f"subjectAltName={alt_name}"], check=True, capture_output=True,
                   timeout=60)
    return cert, key
