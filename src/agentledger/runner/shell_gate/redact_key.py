"""The key of the log's fingerprints (``[REDACTED:KIND:HASH]``), and keeping it secret.

A fingerprint is the keyed sha256 of a secret, so that the same secret gives the same digits
in a log without anyone who reads the log being able to test guesses against them. That holds
only while the key stays private: it lives in the user's cache directory
(``redaction.key``, mode 0600, in a directory `validated_cache.trusted_dir` checks), the
sandbox shows that directory empty (`hidden_dirs`: a command classified read-only could
``xxd`` it into its output), and its bytes, as hex or base64, are taken out of every text the
gate logs (`strip_key`).
"""

from __future__ import annotations

import os

__all__ = ["hidden_dirs", "redaction_key", "strip_key"]

_key: bytes | None = None
_forms: list[object] = []
KEY_MARK = "[REDACTED:redaction-key]"
"""What the key's bytes become in a logged text."""


def redaction_key() -> bytes:
    """The user's private key for fingerprints (made on first use); a key for this process
    alone when it cannot be stored or its directory is not this user's alone."""
    global _key
    if _key is None:
        from agentledger.shell.validated_cache import cache_dir, open_private, trusted_dir

        path = os.path.join(cache_dir(), "redaction.key")
        if trusted_dir(cache_dir()) is not None:
            _key = os.urandom(32)  # a key others could read or plant is no key
            return _key
        fd = open_private(path)
        _key = b""
        if fd is not None:
            with os.fdopen(fd, "rb") as handle:
                _key = handle.read()
        if len(_key) < 32:
            _key = _new_key(path)
    return _key


def _new_key(path: str) -> bytes:
    key = os.urandom(32)
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(key)
        # A link appears whole or not at all: a gate racing this one reads a full key.
        os.link(temporary, path)
    except FileExistsError:
        from agentledger.shell.validated_cache import open_private

        found = open_private(path)
        if found is not None:
            with os.fdopen(found, "rb") as handle:
                stored = handle.read()
            key = stored if len(stored) >= 32 else key
    except OSError:
        pass
    finally:
        import contextlib

        with contextlib.suppress(OSError):
            os.unlink(temporary)
    return key


def hidden_dirs() -> list[str]:
    """The directories the sandbox shows empty: the cache directory this gate uses (its key
    and cached tables) and this user's default one, where they exist."""
    from agentledger.shell.validated_cache import cache_dir

    places = [cache_dir()]
    try:
        import pwd

        home = pwd.getpwuid(os.geteuid()).pw_dir
        places.append(os.path.join(home, ".cache", "agentledger"))
    except (KeyError, ImportError):
        pass
    found: list[str] = []
    for place in places:
        real = os.path.realpath(place)
        if real not in found and os.path.isdir(real):
            found.append(real)
    return found


def strip_key(text: str) -> str:
    """`text` with the key's bytes, as hex (either case, any spaces, colons or line breaks
    between digit pairs: ``xxd -p`` folds at 60) or base64, replaced by KEY_MARK."""
    if len(text) < 32:
        return text
    if not _forms:
        key = redaction_key()
        import base64
        import re

        digits = key.hex()
        pairs = [digits[i : i + 2] for i in range(0, len(digits), 2)]
        hex_form = r"[\s:]*".join(pairs)
        encoded = [base64.b64encode(key).decode(), base64.urlsafe_b64encode(key).decode()]
        b64 = "|".join(re.escape(e.rstrip("=")) + "=*" for e in encoded)
        _forms.append(re.compile(f"{hex_form}|{b64}", re.I))
        _forms.append((digits[:6], digits[:6].upper(), encoded[0][:6], encoded[1][:6]))
    regex, heads = _forms[0], _forms[1]
    assert isinstance(heads, tuple)
    if not any(head in text for head in heads) and not _spaced(text, heads[0]):
        return text
    return regex.sub(KEY_MARK, text)  # type: ignore[attr-defined, no-any-return]


def _spaced(text: str, head: str) -> bool:
    """True when the key's first hex digit pairs occur with separators between them."""
    lowered = text.lower()
    return head[:2] in lowered and "".join(lowered.split()).replace(":", "").find(head) >= 0
