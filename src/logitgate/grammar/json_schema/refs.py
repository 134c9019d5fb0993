"""``$ref`` resolution with the ``referencing`` library (``$id``, ``$anchor``, JSON pointers)."""

from __future__ import annotations

from functools import cache
from typing import Any
from urllib.parse import unquote, urljoin

from ...errors import SchemaError
from .drafts import validator_class

__all__ = ["RefResolver", "draft_of"]

_DRAFT_URIS = {
    "draft-04": "draft4", "draft-06": "draft6", "draft-07": "draft7",
    "2019-09": "draft2019-09", "2020-12": "draft2020-12",
}


def draft_of(schema: Any) -> str:
    """The draft named by ``$schema`` (``draft2020-12`` when absent or unknown)."""
    uri = schema.get("$schema", "") if isinstance(schema, dict) else ""
    if isinstance(uri, str):
        for key, name in _DRAFT_URIS.items():
            if key in uri:
                return name
    return "draft2020-12"


@cache
def _referencing() -> Any:
    """The ``referencing`` package (the ``schema`` extra), imported once, on first use."""
    import referencing
    import referencing.exceptions
    import referencing.jsonschema

    return referencing


class RefResolver:
    """Resolves references relative to a base URI inside one root schema document."""

    def __init__(self, root: Any):
        lib = _referencing()
        drafts = lib.jsonschema
        self.draft = draft_of(root)
        spec = {"draft4": drafts.DRAFT4, "draft6": drafts.DRAFT6, "draft7": drafts.DRAFT7,
                "draft2019-09": drafts.DRAFT201909}.get(self.draft, drafts.DRAFT202012)
        self.spec = spec
        self._resource: Any = None
        self.root_base = ""
        # a root without an id has the base "": its resource is made when the registry is (most
        # schemas have no $ref), unless its $schema is odd (made now: refused now if it is bad)
        if not (isinstance(root, dict) and "$id" not in root and "id" not in root
                and isinstance(root.get("$schema", ""), str)):
            self._resource = self._make_resource(root)
            self.root_base = self._resource.id() or ""
        self._root = root
        self._plain: bool | None = None  # whether the document names no resource (found on first use)
        self._registry: Any = None

    def _make_resource(self, root: Any) -> Any:
        try:
            return _referencing().Resource.from_contents(root, default_specification=self.spec)
        except Exception as exc:  # malformed ids and the like
            raise SchemaError(f"cannot index schema: {exc}", keyword="$id") from exc

    @property
    def registry(self) -> Any:
        """The schema's resources (every ``$id`` and anchor), indexed on first use: most schemas
        have no ``$ref``, and crawling a document costs about as much as converting a small one."""
        if self._registry is None:
            if self._resource is None:
                self._resource = self._make_resource(self._root)
            try:
                registry = _referencing().Registry().with_resource(self.root_base, self._resource)
                if self.root_base:
                    registry = registry.with_resource("", self._resource)
                self._registry = registry.crawl()
            except Exception as exc:  # malformed ids and the like
                raise SchemaError(f"cannot index schema: {exc}", keyword="$id") from exc
        return self._registry

    def base_of(self, schema: Any, base: str) -> str:
        """The base URI in force inside ``schema`` reached with base ``base``. Up to draft 7 a
        ``$ref`` overrides its siblings, an id among them: such a schema keeps the base it has."""
        if isinstance(schema, dict):
            if "$ref" in schema and self.draft in _REF_OVERRIDES:
                return base
            sid = schema.get("$id") if self.draft not in ("draft4",) else schema.get("id")
            if isinstance(sid, str) and sid and not sid.startswith("#"):
                return urljoin(base, sid.split("#")[0]) if base else sid.split("#")[0]
        return base

    def resolve(self, ref: str, base: str, pointer: str) -> tuple[Any, str]:
        """``(target schema, its base URI)``; unknown or remote targets raise SchemaError.

        A JSON pointer into a document that names no resource (no ``$id``, ``id`` or anchor
        anywhere: most schemas) is followed here directly, without indexing the document.
        """
        if not isinstance(ref, str):
            raise SchemaError("$ref must be a string", keyword="$ref", pointer=pointer)
        if ref[:2] == "#/" or ref == "#":
            if self._plain is None:
                self._plain = not _names_resources(self._root)
            if self._plain:
                target = _follow_pointer(self._root, ref[1:])
                if target is not _MISSING:
                    return target, self.root_base
        try:
            resolved = self.registry.resolver(base_uri=base).lookup(ref)
        except _referencing().exceptions.Unresolvable as exc:
            raise SchemaError(f"cannot resolve $ref {ref!r}: {exc}", keyword="$ref", pointer=pointer) from exc
        except Exception as exc:  # pragma: no cover - defensive (odd URIs)
            raise SchemaError(f"cannot resolve $ref {ref!r}: {exc}", keyword="$ref", pointer=pointer) from exc
        return resolved.contents, resolved.resolver._base_uri

    def validator(self, schema: Any, base: str, format_checker: Any = None) -> Any:
        """A ``jsonschema`` validator for ``schema`` with references resolved from ``base``."""
        cls = validator_class(self.draft)
        if not _refers(schema):  # (checking an enum value or a key name: no index needed)
            return cls(schema, format_checker=format_checker)
        return cls(schema, registry=self.registry, format_checker=format_checker,
                   _resolver=self.registry.resolver(base_uri=base))


#: keywords that name a resource or an anchor (``id`` is draft 4's ``$id``)
_RESOURCE_KEYWORDS = frozenset(("$id", "id", "$anchor", "$dynamicAnchor", "$recursiveAnchor"))
_ANCHOR_KEYWORDS = frozenset(("$dynamicAnchor", "$recursiveAnchor"))  # (named by any value)
_MISSING = object()
#: the drafts where ``$ref`` overrides every sibling keyword (an id beside it changes no base)
_REF_OVERRIDES = frozenset(("draft4", "draft6", "draft7"))


def _names_resources(doc: Any) -> bool:
    """Whether ``doc`` may name a resource or an anchor anywhere: a resource keyword with a string
    value (or any anchor keyword) under any key, a property named so included (conservative)."""
    stack = [doc]
    while stack:
        x = stack.pop()
        if type(x) is dict:
            for k, v in x.items():
                if k in _RESOURCE_KEYWORDS and (type(v) is str or k in _ANCHOR_KEYWORDS):
                    return True
                if type(v) is dict or type(v) is list:
                    stack.append(v)
        elif type(x) is list:
            stack.extend(v for v in x if type(v) is dict or type(v) is list)
    return False


def _follow_pointer(doc: Any, fragment: str) -> Any:
    """The value at the URI fragment ``fragment`` (a JSON pointer, percent-encoded) in ``doc``, or
    ``_MISSING``."""
    x = doc
    if not fragment:
        return x
    for token in unquote(fragment)[1:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if type(x) is dict:
            if token not in x:
                return _MISSING
            x = x[token]
        elif type(x) is list and token.isascii() and token.isdigit() and (token == "0" or token[0] != "0"):
            if int(token) >= len(x):
                return _MISSING
            x = x[int(token)]
        else:
            return _MISSING
    return x


def _refers(schema: Any) -> bool:
    """Whether ``schema`` holds a reference anywhere (``$ref``, ``$dynamicRef``, ``$recursiveRef``)."""
    stack = [schema]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if "$ref" in x or "$dynamicRef" in x or "$recursiveRef" in x:
                return True
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return False
