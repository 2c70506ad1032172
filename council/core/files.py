"""Reading a JSON file into a pydantic model, with one ConfigError that names the file and every bad field.

Shared by the council's configuration (``council.protocol.config``) and the embedded provider's
(``council.sim``), so a bad file reads alike whichever of them loads it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from council.core.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


def read_json_object(path: str | os.PathLike[str], what: str) -> dict[str, Any]:
    """A JSON file holding one object (a config, a vendor map), or ConfigError naming the file."""
    try:
        data = orjson.loads(Path(path).read_bytes())
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: {what} not found") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{path}: {what} is not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: {what} must be one JSON object, got {type(data).__name__}")
    return data


def model_from_file(model: type[M], path: str | os.PathLike[str], what: str, **overrides: Any) -> M:
    """``model`` validated from a JSON file with ``overrides`` on top; every problem in one ConfigError."""
    data = read_json_object(path, what)
    try:
        return model.model_validate({**data, **overrides})
    except ValidationError as exc:
        raise ConfigError(f"{path}: bad {what}: {validation_problems(exc)}") from exc


def validation_problems(exc: ValidationError) -> str:
    """Every problem of a pydantic error on one line, as ``field: message`` (no pydantic boilerplate)."""
    return "; ".join(error_line(e) for e in exc.errors())


def error_line(error: Any) -> str:
    """One problem of a pydantic error (an item of ``ValidationError.errors()``) as ``field: message``."""
    return f"{'.'.join(map(str, error['loc'])) or '<root>'}: {error['msg'].removeprefix('Value error, ')}"
