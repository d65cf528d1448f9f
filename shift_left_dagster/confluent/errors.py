"""Typed errors of the Confluent client.

Every error is a ``ConfluentError`` so callers can catch the family, and each
subclass says what went wrong in words a person can act on: method, path,
HTTP status and the server's own detail. No message ever carries a header,
an API secret or a request body.
"""

from __future__ import annotations


class ConfluentError(Exception):
    """Base of every error raised by the Confluent client."""


class ConfigError(ConfluentError):
    """An API was called without the URL or credentials it needs."""

    def __init__(self, api: str, missing: list[str]) -> None:
        self.api = api
        self.missing = list(missing)
        super().__init__(f"{api} is not configured: missing {', '.join(self.missing)}")


class ConnectionFailed(ConfluentError):
    """The service could not be reached (after the retries that were safe)."""

    def __init__(self, method: str, path: str, reason: str, attempts: int) -> None:
        self.method = method
        self.path = path
        self.attempts = attempts
        super().__init__(f"{method} {path}: could not reach the service after {attempts} attempt(s): {reason}")


class ApiError(ConfluentError):
    """The service answered with an error status."""

    hint = ""

    def __init__(
        self,
        method: str,
        path: str,
        status: int,
        detail: str,
        *,
        code: str | None = None,
        request_id: str | None = None,
    ) -> None:
        self.method = method
        self.path = path
        self.status = status
        self.detail = detail
        self.code = code
        self.request_id = request_id
        message = f"{method} {path} failed with HTTP {status}: {detail or 'no detail given'}"
        if self.hint:
            message += f" ({self.hint})"
        if request_id:
            message += f" [request id {request_id}]"
        super().__init__(message)


class BadRequest(ApiError):
    """400 or 422: the request was malformed or failed validation."""


class AuthError(ApiError):
    """401 or 403: never retried, the same key would fail again."""

    hint = "check the API key and secret of this API, and the key's permissions"


class NotFound(ApiError):
    """404: the resource does not exist (or no longer exists)."""


class Conflict(ApiError):
    """409: name already taken, stale resource_version, or results not ready.

    ``landed`` is true when an earlier, ambiguous attempt of the same create
    call (connection error or 5xx) probably created the resource itself.
    """

    def __init__(
        self,
        method: str,
        path: str,
        status: int,
        detail: str,
        *,
        code: str | None = None,
        request_id: str | None = None,
        landed: bool = False,
    ) -> None:
        super().__init__(method, path, status, detail, code=code, request_id=request_id)
        self.landed = landed


class RateLimited(ApiError):
    """429 still returned once the retries were exhausted."""

    hint = "rate limited; retries exhausted"


class ServerError(ApiError):
    """5xx still returned once the retries were exhausted."""


class StatementFailed(ConfluentError):
    """A Flink statement reached phase FAILED."""

    def __init__(self, name: str, detail: str, exception_message: str | None = None) -> None:
        self.name = name
        self.detail = detail
        self.exception_message = exception_message
        reason = detail or exception_message or "no detail given by the service"
        super().__init__(f"Flink statement {name} FAILED: {reason}")


class ProvisioningFailed(ConfluentError):
    """A compute pool reached phase FAILED while being provisioned."""

    def __init__(self, pool_id: str, display_name: str) -> None:
        self.pool_id = pool_id
        self.display_name = display_name
        super().__init__(f"compute pool {display_name} ({pool_id}) FAILED to provision")


class Stopped(RuntimeError):
    """A wait was given up because its caller asked to stop (a terminated run, Ctrl-C): not a failure
    of the service, so not a ConfluentError."""

    def __init__(self, subject: str, wanted: str) -> None:
        self.subject, self.wanted = subject, wanted
        super().__init__(f"stopped while waiting for {subject} to reach {wanted}")


class TimeoutWaiting(ConfluentError):
    """A wait loop ran out of time; says what it waited for and what it last saw."""

    def __init__(self, subject: str, wanted: str, last_seen: str | None, timeout: float) -> None:
        self.subject = subject
        self.wanted = wanted
        self.last_seen = last_seen
        self.timeout = timeout
        super().__init__(
            f"timed out after {timeout:g} s waiting for {subject} to reach {wanted}; "
            f"last phase seen: {last_seen or 'none'}"
        )


class WrongService(ConfluentError):
    """The local service answering is not the one of this client's data folder (or not a local service)."""

    def __init__(self, url: str, expected: str, actual: str | None) -> None:
        self.url = url
        self.expected = expected
        self.actual = actual
        answered = f"the service of data folder {actual}" if actual else "no local service"
        super().__init__(f"{url} is {answered}, not the one of data folder {expected}: refusing to use it")
