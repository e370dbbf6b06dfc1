"""A settings dataclass's fields name their variables (`env_field`); `read_env` reads each one as
its field's type (bool, int, float, Path, text, a network list), the field's default when the
variable is unset or empty."""

from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envfields.networks import Network, parse_networks


def env_field(name: str, default: object, *, lower: bool = False, secret: bool = False) -> Any:
    """A field read from the environment variable `name`; its type is the field's annotation, and
    `default` is used when the variable is unset or empty. `lower`: the value is lower-cased.
    `secret`: left out of the settings' repr (so a logged or printed settings object never shows it)."""
    return dataclasses.field(default=default, repr=not secret, metadata={"env": name, "lower": lower})


def read_env(cls: type, environ: Mapping[str, str] | None, error: type[ValueError]) -> dict[str, Any]:
    """The values of `cls`'s fields (each declared with `env_field`) from `environ` (default: the
    process's environment), for `cls(**values)`. A malformed value raises `error`, naming the variable."""
    env = os.environ if environ is None else environ
    types = typing.get_type_hints(cls)
    values = {}
    for field in dataclasses.fields(cls):
        name = field.metadata["env"]
        raw = env.get(name, "").strip()
        if field.metadata["lower"]:
            raw = raw.lower()
        values[field.name] = _parse(name, types[field.name], raw, field.default, error)
    return values


def _parse(name: str, kind: object, raw: str, default: Any, error: type[ValueError]) -> Any:
    """The value of variable `name` (stripped text `raw`) as type `kind`; `default` when empty."""
    if kind == tuple[Network, ...]:
        try:
            return parse_networks(raw)
        except ValueError as exc:
            raise error(f"{name}: {exc}") from None
    if not raw:
        return default
    if kind is bool:
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise error(f"{name} must be true or false, got {raw.lower()!r}")
    if kind is int:
        try:
            return int(raw)
        except ValueError:
            raise error(f"{name} must be an integer, got {raw!r}") from None
    if kind is float:
        try:
            return float(raw)
        except ValueError:
            raise error(f"{name} must be a number, got {raw!r}") from None
    if kind is Path:
        return Path(raw)
    if kind in (str, str | None):
        return raw
    raise TypeError(f"settings: no reader for {name}'s type {kind}")
