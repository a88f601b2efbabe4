"""Frozen dataclasses to and from plain JSON-able dicts, driven by their type hints.

Every record (captures, symptoms, comparisons, recordings) goes through here, so the JSON
shape of a record is its dataclass and nothing else.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing


class RecordError(ValueError):
    """A dict does not have the shape of the record it should become."""


def read_json(path, what: str):
    """The JSON document at `path`; BadInput ('not <what>') names the file and the problem."""
    import json

    from .errors import BadInput

    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInput(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise BadInput(f"{path}: not {what}: {error}") from None


def write_text_atomically(path, text: str) -> None:
    """Write `text` to a temporary file beside `path`, then rename it over `path`: a reader
    (or a crash) never sees a half-written file under the real name."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)


def to_dict(record) -> dict:
    return dataclasses.asdict(record)


@functools.lru_cache(maxsize=None)
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def from_dict(cls, data, where: str = "record"):
    """Build `cls` from `data`, checking types; errors name the path of the bad field."""
    return _convert(cls, data, where)


def _convert(hint, value, where: str):
    origin = typing.get_origin(hint)
    if hint is typing.Any:
        return value
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _convert(option, value, where)
            except RecordError as error:
                errors.append(str(error))
        raise RecordError(errors[0] if errors else f"{where}: unexpected null")
    if origin is typing.Literal:
        if value not in typing.get_args(hint):
            raise RecordError(f"{where}: {value!r} is not one of {typing.get_args(hint)}")
        return value
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise RecordError(f"{where}: expected a list, got {type(value).__name__}")
        item_hint = typing.get_args(hint)[0]
        return tuple(_convert(item_hint, item, f"{where}[{index}]") for index, item in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise RecordError(f"{where}: expected a mapping, got {type(value).__name__}")
        key_hint, value_hint = typing.get_args(hint)
        return {
            _convert(key_hint, key, f"{where}.{key}"): _convert(value_hint, item, f"{where}.{key}")
            for key, item in value.items()
        }
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise RecordError(f"{where}: expected a mapping, got {type(value).__name__}")
        fields = {field.name: field for field in dataclasses.fields(hint)}
        unknown = sorted(set(value) - set(fields))
        if unknown:
            raise RecordError(f"{where}: unknown field {unknown[0]!r}")
        hints = _hints(hint)
        kwargs = {}
        for name, field in fields.items():
            if name in value:
                kwargs[name] = _convert(hints[name], value[name], f"{where}.{name}")
            elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                raise RecordError(f"{where}: missing field {name!r}")
        return hint(**kwargs)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise RecordError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if hint in (int, str, bool):
        if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
            raise RecordError(f"{where}: expected {hint.__name__}, got {value!r}")
        return value
    raise RecordError(f"{where}: cannot read a {hint!r}")
