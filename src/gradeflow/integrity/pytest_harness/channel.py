"""What the grader hands the run and what signs its answer: ``_read_channel`` reads standard input whole (the
signing key, the handed test sources, the varied run's settings) before any code of the repository runs;
``_signer`` makes the run's HMAC, held only as a keyword default of ``sign`` (reads of which the audit hook refuses),
which signs the record and every line of the call log."""


def _signer(key):
    # The run's key (hex, from the channel) as an OpenSSL HMAC-SHA256 built once from a buffer that is then
    # zeroed; each signature is made on a copy. The MAC is held only as a keyword default of ``sign`` (a dict gc
    # does not track: gc.get_objects never lists it): the audit hook refuses the repository's reads of the
    # plugin's functions' defaults and code and gc's referents of them, and ``_hashlib``'s type
    # (unlike ``hmac.HMAC``) has no method the code under test could replace to be handed the MAC. The
    # process is made undumpable (_native), so no other process of the user reads its memory. None without a key.
    try:
        from _hashlib import hmac_new  # OpenSSL's; without it the run is unsigned, on the base as well
    except ImportError:
        return None
    try:
        secret = bytearray.fromhex(key) if isinstance(key, str) and key else None
    except ValueError:
        secret = None
    if secret is None:
        return None
    try:
        mac = hmac_new(secret, digestmod="sha256")
    finally:
        secret[:] = bytes(len(secret))

    def sign(data, *, _mac=mac):
        copy = _mac.copy()
        copy.update(data)
        return copy.hexdigest()

    return sign


def _read_channel():
    # What the grader hands over on standard input (see Harness.channel): read whole before any code of
    # the repository runs, then standard input is pointed at /dev/null so nothing started later reads it.
    import json
    import os

    chunks = []
    try:
        while True:
            chunk = os.read(0, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    except OSError:
        return {}
    try:
        channel = json.loads(b"".join(chunks) or b"{}")
    except ValueError:
        return {}
    return channel if isinstance(channel, dict) else {}
