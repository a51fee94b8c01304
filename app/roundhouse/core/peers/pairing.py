"""Pairing codes and the proofs that bind a code to both daemons' certificates.

The code shown on one machine (the responder) is typed into the other (the initiator), whose
daemon calls the responder's peer listener over TLS it cannot yet verify. Each side proves it
knows the code with HMAC(scrypt(code), transcript), the transcript naming both certificates'
fingerprints, the hashes of both keys and the side's role. A man in the middle presents his own
certificate, so the transcript the initiator signs names it and the responder's check fails;
and he cannot forge a proof without the code, which a scrypt per guess and a few tries guard.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from roundhouse.core.errors import RoundhouseError

# Crockford's base32: no I, L, O or U, so a code read aloud or typed is not mistaken.
ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
CODE_LENGTH = 10  # 50 bits
VALID_S = 600.0
MAX_WRONG = 5
INITIATOR = "initiator"
RESPONDER = "responder"
_SCRYPT_N = 2**14


class PairingRefusedError(RoundhouseError):
    """A pairing attempt is refused: the message says why and what to do."""

    title = "Pairing refused"
    status = 403


@dataclass(frozen=True)
class PairingOffer:
    """An open code: shown as XXXXX-XXXXX, valid until `expires_at` (seconds since the epoch)."""

    code: str
    expires_at: float

    @property
    def shown(self) -> str:
        return f"{self.code[:5]}-{self.code[5:]}"


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def normalize_code(typed: str) -> str:
    """A code as typed (any case, dashes and spaces, I/L for 1, O for 0) in canonical form."""
    code = typed.upper().replace("-", "").replace(" ", "")
    return code.translate(str.maketrans("ILO", "110"))


def code_key(code: str, responder_fingerprint: str) -> bytes:
    """The proof key for `code`: scrypt, salted with the responder's fingerprint so one guess
    serves one daemon only. About 50 ms: call it from a thread in async code."""
    return hashlib.scrypt(
        normalize_code(code).encode("ascii"),
        salt=b"roundhouse-pairing-v1:" + responder_fingerprint.encode("ascii"),
        n=_SCRYPT_N,
        r=8,
        p=1,
        dklen=32,
    )


def transcript(
    responder_fingerprint: str,
    initiator_fingerprint: str,
    initiator_key_sha256: str,
    responder_key_sha256: str = "",
) -> bytes:
    """What a proof covers: both certificates and the keys exchanged (the responder's key is
    not known yet when the initiator signs, so its proof covers the initiator's alone)."""
    parts = (
        "roundhouse-pairing-v1",
        responder_fingerprint,
        initiator_fingerprint,
        initiator_key_sha256,
        responder_key_sha256,
    )
    return "\n".join(parts).encode("ascii")


def proof(key: bytes, transcript_bytes: bytes, role: str) -> str:
    return hmac.new(key, transcript_bytes + b"\n" + role.encode("ascii"), "sha256").hexdigest()


def proof_ok(key: bytes, transcript_bytes: bytes, role: str, offered: str) -> bool:
    return hmac.compare_digest(proof(key, transcript_bytes, role).encode(), offered.encode())


class PairingCodes:
    """The one open code of a daemon: opening a new one voids the last; a right proof uses it
    up; MAX_WRONG wrong proofs void it; it expires after VALID_S."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._offer: PairingOffer | None = None
        self._wrong = 0

    def open(self) -> PairingOffer:
        with self._lock:
            self._offer = PairingOffer(new_code(), self._clock() + VALID_S)
            self._wrong = 0
            return self._offer

    def current(self) -> PairingOffer | None:
        with self._lock:
            return self._live()

    def _live(self) -> PairingOffer | None:
        if self._offer is not None and self._clock() >= self._offer.expires_at:
            self._offer = None
        return self._offer

    def close(self) -> None:
        with self._lock:
            self._offer = None

    def accept(self, responder_fingerprint: str, transcript_bytes: bytes, offered: str) -> bytes:
        """Check an initiator's proof against the open code; the code's proof key when right
        (the code is then used up), else PairingRefusedError. Blocking (scrypt)."""
        with self._lock:
            offer = self._live()
            if offer is None:
                raise PairingRefusedError(
                    "No pairing code is open on that machine (it expired, was used, or was "
                    "voided by wrong tries). Open a new one there with `roundhouse peers code`."
                )
            key = code_key(offer.code, responder_fingerprint)
            if proof_ok(key, transcript_bytes, INITIATOR, offered):
                self._offer = None  # single use: a replay finds no code
                return key
            self._wrong += 1
            if self._wrong >= MAX_WRONG:
                self._offer = None
                raise PairingRefusedError(
                    "Wrong pairing code, too many times: the code is void. Open a new one on "
                    "that machine with `roundhouse peers code`."
                )
            raise PairingRefusedError(
                "Wrong pairing code, or someone between the two machines changed the "
                "connection. Check the code shown on that machine and try again."
            )
