"""This daemon's identity toward its peers: a self-signed certificate and key made once, and
the pinned TLS context a client uses to trust exactly one peer's certificate."""

from __future__ import annotations

import datetime
import hashlib
import os
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path

from roundhouse.base.files import write_atomic
from roundhouse.core.errors import InvalidInputError, ServiceUnavailableError

CERT_FILE = "peer-identity.crt"
KEY_FILE = "peer-identity.key"
# The pin, not the expiry, is what a peer trusts; a long life spares re-pairing.
_VALID_DAYS = 3650


@dataclass(frozen=True)
class Identity:
    """The certificate (PEM) this daemon presents to peers, where it and its key are kept,
    and its fingerprint (sha256 of the DER certificate, lowercase hex)."""

    cert_pem: str
    cert_path: Path
    key_path: Path
    fingerprint: str


def load_or_create_identity(folder: Path, name: str) -> Identity:
    """The identity kept in `folder`, made there first when there is none (key file 0600)."""
    cert_path, key_path = folder / CERT_FILE, folder / KEY_FILE
    if not (cert_path.is_file() and key_path.is_file()):
        _create(cert_path, key_path, name)
    try:
        cert_pem = cert_path.read_text("ascii")
        fingerprint = fingerprint_of(cert_pem)
    except (OSError, ValueError, InvalidInputError) as exc:
        raise ServiceUnavailableError(
            f"This daemon's peer certificate in {folder} cannot be read ({exc}). Remove "
            f"{CERT_FILE} and {KEY_FILE} there to make a new one (paired machines must then "
            "be paired again)."
        ) from exc
    return Identity(cert_pem, cert_path, key_path, fingerprint)


def _create(cert_path: Path, key_path: Path, name: str) -> None:
    # Imported here: only the first start of a home makes an identity, and a build that lacks
    # the package says so in words (below) instead of failing the daemon's start.
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError as exc:
        raise ServiceUnavailableError(
            "Pairing needs the `cryptography` package to make this machine's certificate, and "
            "it is not installed: `pip install cryptography` in Roundhouse's environment."
        ) from exc
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"Roundhouse {name}"[:64])])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=_VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    key_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # The key is made 0600 before a byte of it is written.
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key_pem)
    key_path.chmod(0o600)
    write_atomic(cert_path, cert.public_bytes(serialization.Encoding.PEM))


def fingerprint_of(cert_pem: str) -> str:
    """sha256 of the DER form of a PEM certificate, lowercase hex."""
    try:
        der = ssl.PEM_cert_to_DER_cert(cert_pem.strip() + "\n")
    except ValueError as exc:
        raise InvalidInputError("The certificate is not a PEM certificate.") from exc
    return hashlib.sha256(der).hexdigest()


def fingerprint_of_der(der: bytes) -> str:
    """sha256 of a DER certificate, lowercase hex."""
    return hashlib.sha256(der).hexdigest()


def der_to_pem(der: bytes) -> str:
    return ssl.DER_cert_to_PEM_cert(der)


def shown_fingerprint(fingerprint: str) -> str:
    """A fingerprint as a person compares it: groups of four, the first 32 hex digits."""
    head = fingerprint[:32].upper()
    return " ".join(head[i : i + 4] for i in range(0, len(head), 4))


def pinned_context(cert_pem: str) -> ssl.SSLContext:
    """A client context that trusts exactly `cert_pem` and nothing else; the host name is not
    checked because the pinned certificate, not a name, is the peer's identity."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = False
    context.verify_mode = ssl.CERT_REQUIRED
    try:
        context.load_verify_locations(cadata=cert_pem)
    except ssl.SSLError as exc:
        raise InvalidInputError("The pinned certificate cannot be loaded.") from exc
    return context


def first_contact_context() -> ssl.SSLContext:
    """A client context for the pairing request alone: it accepts any certificate because the
    pairing proof, not a CA, binds the certificate seen to the code (pairing.py)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def server_context(identity: Identity) -> ssl.SSLContext:
    """The listener's context: presents this daemon's certificate."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(identity.cert_path), str(identity.key_path))
    return context


def machine_name() -> str:
    """This machine's name as peers show it."""
    return socket.gethostname() or "this machine"
