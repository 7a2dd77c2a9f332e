"""How machine-specific values are scrubbed from a capture (which variables it keeps:
``clusterenv._diagnosis.capture.launcher_variables``)."""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping

_OWN_HOST = re.compile(rf"\b{re.escape(socket.gethostname().split('.')[0])}\b")


def scrub_text(text: str) -> str:
    """Replace this machine's host name."""
    return _OWN_HOST.sub("build-host", text)


def scrub(env: Mapping[str, str]) -> dict[str, str]:
    """Replace this machine's host name and paths so a capture is reproducible.

    Paths (values starting with '/': config files, submit dirs, PMIx sockets, argv) carry
    no launcher semantics that detection reads.
    """
    return {
        key: "/scrubbed" if value.startswith("/") else scrub_text(value)
        for key, value in env.items()
    }
