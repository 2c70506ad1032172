"""The project's error tree: one root, a few branches. Third-party errors are translated at the edge."""

from __future__ import annotations


class CouncilError(Exception):
    """Root of every error this project raises on purpose."""


class ConfigError(CouncilError):
    """Bad configuration or command-line input."""


class UnknownVendorError(ConfigError, ValueError):
    """A model whose vendor cannot be decided (the operator must map it with ``--vendor-map``).

    Also a ValueError, so that schema validation reports it as a problem of the row's ``model`` field.
    """


class VendorConflictError(ConfigError, ValueError):
    """A row's stated vendor contradicts the vendor its model id resolves to."""


class InputError(CouncilError):
    """A bank or responses file failed validation; ``problems`` holds one ``file:line: field: problem`` each."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        head = f"{len(self.problems)} problem(s) in input"
        super().__init__(head + ":\n" + "\n".join(self.problems))


class RunFolderError(CouncilError):
    """A run folder that cannot be created, read or would be overwritten."""


class ProviderError(CouncilError):
    """A provider call failed after its retries (HTTP status, timeout or connection problem)."""

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts


class RateLimited(ProviderError):
    """The provider answered 429; ``retry_after_s`` is its hint, if any."""

    def __init__(self, message: str, *, retry_after_s: float | None = None, attempts: int = 0) -> None:
        super().__init__(message, status=429, attempts=attempts)
        self.retry_after_s = retry_after_s


class ProviderUnavailable(ProviderError):
    """A vendor cannot be used at all (connection refused, unknown host, 401/403, 404 for a wrong base URL
    or model), or its circuit breaker is open: retrying will not help, so the run stops."""


class ServiceError(CouncilError):
    """The grading service answered an error (``status``, and its Problem body as ``problem``), or could not be
    reached (``status`` None)."""

    def __init__(self, message: str, *, status: int | None = None, problem: dict | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.problem = problem or {}
