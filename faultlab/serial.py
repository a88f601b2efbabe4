"""Frozen dataclasses to and from plain JSON-able dicts, driven by their type hints.

Every record (captures, symptoms, comparisons, recordings) goes through here, so the JSON
shape of a record is its dataclass and nothing else.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing

from .textsafe import excerpt


class RecordError(ValueError):
    """A dict does not have the shape of the record it should become."""


def read_json(path, what: str, limit: int, looks_right=None):
    """The JSON document at `path` (a regular file of at most `limit` bytes); BadInput
    ('not <what>') names the file and the problem."""
    import json

    from .errors import BadInput
    from .userfiles import read_bytes

    data = read_bytes(path, limit, what, looks_right)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise BadInput(f"{path}: not {what}: not UTF-8 text (byte {error.start})") from None
    except RecursionError:
        raise BadInput(f"{path}: not {what}: nested too deeply") from None
    except ValueError as error:
        raise BadInput(f"{path}: not {what}: {error}") from None


def to_dict(record) -> dict:
    return dataclasses.asdict(record)


@functools.lru_cache(maxsize=None)
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def _key(key) -> str:
    """A mapping key from foreign data, as it may appear in an error's field path."""
    return excerpt(key) if not isinstance(key, str) or len(key) > 40 or not key.isprintable() else key


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
            raise RecordError(f"{where}: {excerpt(value)} is not one of {typing.get_args(hint)}")
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
            _convert(key_hint, key, f"{where}.{_key(key)}"): _convert(value_hint, item, f"{where}.{_key(key)}")
            for key, item in value.items()
        }
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise RecordError(f"{where}: expected a mapping, got {type(value).__name__}")
        fields = {field.name: field for field in dataclasses.fields(hint)}
        unknown = sorted(set(value) - set(fields))
        if unknown:
            raise RecordError(f"{where}: unknown field {excerpt(unknown[0])}")
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
            raise RecordError(f"{where}: expected a number, got {excerpt(value)}")
        return float(value)
    if hint in (int, str, bool):
        if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
            raise RecordError(f"{where}: expected {hint.__name__}, got {excerpt(value)}")
        return value
    raise RecordError(f"{where}: cannot read a {hint!r}")
