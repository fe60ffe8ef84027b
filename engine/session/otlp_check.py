"""Before the first session of ``evalctl run --otel``: is the OTLP/HTTP collector there?

One ``POST`` of an empty trace export request (``ExportTraceServiceRequest`` with no spans: zero
bytes of protobuf) to the traces endpoint the exporter will use, with its headers, without
retries. The endpoint is the standard one (OpenTelemetry specification, "OTLP Exporter
Configuration"): ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` as given, else
``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/traces``, else ``http://localhost:4318/v1/traces``.
Unreachable, silent past the timeout, or answering an HTTP error stops the run with one line
(exit 3), as a model endpoint that fails its check does (``engine.session.backends.probe``).
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request

from engine.util.errors import InfrastructureError
from engine.util.untrusted import one_line

#: Seconds the check waits for the collector at most.
OTLP_CHECK_TIMEOUT_S = 5.0
_DEFAULT = "http://localhost:4318"


def traces_endpoint() -> str:
    """The OTLP/HTTP traces URL of the ``OTEL_EXPORTER_OTLP_*`` variables (module docstring)."""
    given = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if given:
        return given
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or _DEFAULT
    return f"{base.removesuffix('/')}/v1/traces"


def _headers() -> dict[str, str]:
    from opentelemetry.util.re import parse_env_headers

    text = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or os.environ.get("OTEL_EXPORTER_OTLP_HEADERS")
    return dict(parse_env_headers(text or "", liberal=True))


def check_otlp_collector(timeout_s: float = OTLP_CHECK_TIMEOUT_S) -> str:
    """POST an empty export request to :func:`traces_endpoint`; returns the URL when it answered
    2xx. Raises InfrastructureError (one line naming the URL and the variables that set it) when
    it is unreachable, does not answer within ``timeout_s`` seconds, or answers an HTTP error."""
    url = traces_endpoint()
    hint = "start the collector or set OTEL_EXPORTER_OTLP_ENDPOINT"
    if not url.startswith(("http://", "https://")):
        raise InfrastructureError(f"--otel: OTLP endpoint {url!r} is not an http:// or https:// URL; {hint}")
    request = urllib.request.Request(
        url, data=b"", method="POST", headers={**_headers(), "Content-Type": "application/x-protobuf"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            response.read(1 << 16)
    except urllib.error.HTTPError as err:
        raise InfrastructureError(
            f"--otel: OTLP collector {url} answered HTTP {err.code} ({one_line(err.reason, 120)}); {hint}"
        ) from None
    except TimeoutError:
        raise InfrastructureError(
            f"--otel: OTLP collector {url} did not answer in {timeout_s:g} s; {hint}"
        ) from None
    except (urllib.error.URLError, OSError, ValueError) as err:
        cause = getattr(err, "reason", err)
        why = "no answer in time" if isinstance(cause, TimeoutError) else one_line(str(cause), 200)
        raise InfrastructureError(f"--otel: OTLP collector {url} is unreachable ({why}); {hint}") from None
    return url
