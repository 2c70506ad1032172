"""Who may use the service: the tenants file and bearer-token checks.

The file (``council serve --tokens FILE``) is JSON mapping each tenant to the SHA-256 (hex) of its bearer
token, either directly or with the tenant's limits and callback secret::

    {"team-a": "9f86d08...",
     "team-b": {"token_sha256": "60303ae...", "max_running_jobs": 4, "max_rows_per_job": 200000,
                "callback_secret_env": "TEAM_B_CALLBACK_SECRET"}}

Only hashes are stored. A presented token is hashed and compared with every tenant's hash in constant time
(:func:`hmac.compare_digest`, and always all of them), so neither the token nor which tenant it nearly
matched leaks through timing.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from council.protocol.config import validation_problems
from council.core.errors import ConfigError


class Tenant(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    token_sha256: str
    max_running_jobs: int = Field(default=2, ge=1)
    max_rows_per_job: int = Field(default=100_000, ge=1)
    callback_secret_env: str | None = None  # the environment variable holding this tenant's callback secret

    @field_validator("token_sha256")
    @classmethod
    def _hex(cls, value: str) -> str:
        value = value.strip().lower()
        if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
            raise ValueError("must be the SHA-256 of the token, 64 hex digits")
        return value

    def callback_secret(self) -> bytes | None:
        value = os.environ.get(self.callback_secret_env) if self.callback_secret_env else None
        return value.encode() if value else None


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Tenants:
    def __init__(self, tenants: list[Tenant]) -> None:
        if not tenants:
            raise ConfigError("the tenants file names no tenant")
        self.by_name = {t.name: t for t in tenants}

    @classmethod
    def load(cls, path: Path) -> Tenants:
        try:
            data = orjson.loads(Path(path).read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise ConfigError(f"{path}: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: must be a JSON object mapping each tenant to its token's SHA-256")
        tenants = []
        for name, entry in data.items():
            fields = {"token_sha256": entry} if isinstance(entry, str) else entry
            try:
                tenants.append(Tenant.model_validate({**fields, "name": name}))
            except (ValidationError, TypeError) as exc:
                why = validation_problems(exc) if isinstance(exc, ValidationError) else "must be a hash or an object"
                raise ConfigError(f"{path}: tenant {name!r}: {why}") from None
        return cls(tenants)

    def authenticate(self, authorization: str | None) -> Tenant | None:
        """The tenant whose token is in ``authorization`` (``Bearer <token>``), or None."""
        scheme, _, token = (authorization or "").partition(" ")
        presented = token_hash(token.strip()) if scheme.lower() == "bearer" and token.strip() else "-"
        found = None
        for tenant in self.by_name.values():  # every hash compared, whatever matched
            if hmac.compare_digest(presented.encode(), tenant.token_sha256.encode()):
                found = tenant
        return found
