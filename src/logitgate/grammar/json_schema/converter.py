"""The schema walker: turns a JSON Schema into grammar rules.

A (sub)schema is handled as a *conjunction* of schema objects ("nodes"): ``allOf`` members
and ``$ref`` targets are flattened into the list; ``anyOf``/``oneOf``/``if`` are distributed
over the rest of the list as alternatives; ``not`` is applied where it can be exactly
(types and finite value sets). The language of a conjunction is the union, over the JSON
types still allowed, of per-type languages built from every node's keywords. Each distinct
conjunction becomes one grammar rule, so recursive references become recursive rules.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

from ...errors import GrammarError, LimitExceededError, SchemaError
from ..ir import EMPTY, NOTHING, Alt, And, Expr, Not, Ref, Special, alt, and_, is_ref_free, lit, not_, seq
from ..regex import regex_expr
from . import lengths
from . import numbers as num
from .arrays import build_array
from .complement import ARRAY_KEYWORDS, OBJECT_KEYWORDS, keyword_complement, some_member
from .disjoint import ANNOTATIONS, KNOWN_KEYWORDS, disjoint
from .drafts import without_later_keywords
from .formats import UNSUPPORTED_FORMATS, format_expr
from .lengths import counted_content, or_null
from .objects import build_object
from .pattern_lengths import quoted_string
from .refs import RefResolver, draft_of
from .strings import encode_chars
from .values import Lexer, json_equal, json_key, to_fraction

__all__ = ["Converter", "Node"]

ALL_TYPES = frozenset({"null", "boolean", "object", "array", "string", "integer", "fraction"})
_TYPE_MAP = {
    "null": {"null"}, "boolean": {"boolean"}, "object": {"object"}, "array": {"array"},
    "string": {"string"}, "integer": {"integer"}, "number": {"integer", "fraction"},
}
# keywords that cannot be enforced exactly (refused unless trivially satisfied or ignored)
_UNSUPPORTED = ("$dynamicRef", "$recursiveRef", "unevaluatedProperties", "unevaluatedItems")
_DEPENDENCY_KWS = ("dependentRequired", "dependentSchemas", "dependencies")
_TYPE_SCHEMAS = {
    "null": {"type": "null"}, "boolean": {"type": "boolean"}, "object": {"type": "object"},
    "array": {"type": "array"}, "string": {"type": "string"}, "integer": {"type": "integer"},
    "fraction": {"type": "number", "not": {"type": "integer"}},
}
#: rules a conversion may make before it is refused. A grammar that large would not compile anyway:
#: the largest MaskBench grammar that compiles has 10,192 rules (``JsonSchemaStore---prometheus``),
#: the next, 50,640, passes ``CompileLimits.max_nfa_states``; two schemas whose references expand
#: without end were refused at 200,000 rules after 13 and 17 s (a conversion makes ~12,000 a second).
MAX_RULES = 50_000
#: conjunctions an overlapping oneOf's "this branch and not the others" may spell out (each a rule):
#: past this the grammar takes seconds to build (MaskBench's ``Github_medium---o46145``, 1,970 of
#: them with complements of arrays and objects nested four deep: 3 s); the most any file that
#: converts makes is 1,022 (``JsonSchemaStore---semgrep``, compiled in 0.44 s)
MAX_ONEOF_RULES = 1_500
#: values being built inside one another at most (nested properties and items, and the branches of
#: anyOf/oneOf a value distributes over): deeper is a schema that expands without end
MAX_OPEN_VALUES = 100


class Node:
    """One schema object of a conjunction, with its base URI and JSON pointer; ``consumed``: the
    keywords the conjunction stands for otherwise (see :meth:`Converter.validates`). Never
    changed once made. ``key`` identifies the node in a conjunction (its schema object by
    identity). (A plain class with slots: a frozen dataclass took 0.57 µs to make, and a compile
    makes one per subschema it meets.)"""

    __slots__ = ("base", "consumed", "key", "ptr", "schema")

    def __init__(self, schema: Any, base: str, ptr: str, consumed: frozenset = frozenset()) -> None:
        self.schema = schema
        self.base = base
        self.ptr = ptr
        self.consumed = consumed
        self.key: tuple = (id(schema), base, consumed)

    def __eq__(self, other: object) -> bool:
        if type(other) is not Node:
            return NotImplemented
        return (self.schema, self.base, self.ptr, self.consumed) == (other.schema, other.base, other.ptr,
                                                                     other.consumed)

    __hash__ = None  # type: ignore[assignment]  # (its schema is a dict: never hashed, as before)

    def __repr__(self) -> str:
        return f"Node(schema={self.schema!r}, base={self.base!r}, ptr={self.ptr!r}, consumed={self.consumed!r})"


_OBJECT_ONLY = frozenset({"object"})


def _esc(token: str) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


@dataclass
class Negation:
    """What a ``not`` removes: whole types, fixed values, numbers satisfying formulas and
    strings whose content lies in regular languages."""

    types: set
    values: list
    num_formulas: list = field(default_factory=list)  # (formula, the spelling it is limited to)
    str_contents: list = field(default_factory=list)
    positive: Any = None  # a schema equal to the complement (De Morgan form), used instead

    def merge(self, other: Negation) -> None:
        self.types |= other.types
        self.values += other.values
        self.num_formulas += other.num_formulas
        self.str_contents += other.str_contents


_NUM_KWS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
_STRING_ONLY = frozenset({"string"})
#: schemas nested in one another (through anyOf/not/if) a string language follows at most
_MAX_LANGUAGE_DEPTH = 64
_SCALAR_TYPES = frozenset({"string", "integer", "number", "boolean", "null"})
_SCALAR_KEYS = frozenset({"type", "title", "description", "default", "examples", "$comment", "deprecated",
                         "readOnly", "writeOnly"})
_STR_KWS = frozenset({"minLength", "maxLength", "pattern", "format"})
#: keywords that constrain objects or arrays only (a string or number satisfies them whatever they say)
_STRUCTURE_KWS = OBJECT_KEYWORDS | ARRAY_KEYWORDS
#: keywords a string satisfies whatever they say, and those a conjunction's nodes spell out already
#: (a string language skips them; ``then``/``else`` are read with their ``if``)
_VACUOUS_FOR_STRINGS = _STRUCTURE_KWS | _NUM_KWS | {"type", "minLength", "maxLength", "$ref", "allOf", "then", "else"}


@lru_cache(maxsize=1024)
def _search_expr(pattern: str) -> Expr:
    """The search language of ``pattern`` over JSON string content, kept process-wide: of the 333
    patterns in 300 MaskBench schemas, 159 are repeats (``.*``, ``^(.*)$``, UUIDs, identifiers),
    and an expression is immutable (a refused pattern raises again: errors are not kept)."""
    return regex_expr(pattern, search=True, encode_chars=encode_chars)


@lru_cache(maxsize=256)
def _fullmatch_expr(pattern: str) -> Expr:
    """The strings ``pattern`` matches whole, over JSON string content (a format the caller defines)."""
    return regex_expr(pattern, encode_chars=encode_chars)


class Converter:
    """Converts one root schema; :meth:`grammar_rules` returns the rules and the root expression."""

    def __init__(self, root: Any, *, whitespace: str = "flexible", max_whitespace: int | None = None,
                 ignore_keywords: tuple = (), strict_format: bool = True,
                 literal_spellings: str = "canonical", max_rules: int = MAX_RULES,
                 formats: Mapping[str, str] | None = None):
        # (keywords a later draft introduced are taken out of a document that names an older one)
        root = without_later_keywords(root, draft_of(root))
        self.root = root
        self.lex = Lexer(whitespace, max_whitespace, literal_spellings)
        self.ignore = set(ignore_keywords)
        self.strict_format = strict_format
        #: formats the caller defines (name -> a pattern the whole string matches): asserted whatever
        #: ``strict_format`` says, in place of a built-in format of the same name
        self.formats = _custom_formats(formats)
        self._format_grammars: dict[str, Any] = {}  # (a custom format's grammar, for concrete values)
        self.refs = RefResolver(root)
        meta = root.get("$schema") if isinstance(root, dict) else None
        if meta is not None and "$schema" not in self.ignore and not _standard_metaschema(meta):
            raise SchemaError(f"unknown meta-schema {meta!r} (its vocabularies cannot be known)",
                              keyword="$schema", pointer="#")
        self.draft = self.refs.draft
        self.rules: dict[str, Expr] = {}
        self.memo: dict[tuple, str] = {}
        self.in_progress: dict[str, int] = {}
        self.depth = 0
        self.max_rules = max_rules
        self._counter = 0
        self._synthetic: dict[tuple, dict] = {}
        self._keep: list[Any] = []
        self._any: Expr | None = None
        self._regex_cache: dict[str, Expr] = {}
        self._shared: dict[Expr, str] = {}
        self._scalar_bodies: dict[str, Expr] = {}  # by type: those not in _SCALAR_BODIES (see build)
        #: what fixes the body of a schema that is only a scalar type (see build)
        self._scalar_config = (self.draft, whitespace, max_whitespace, literal_spellings, strict_format,
                               frozenset(self.ignore), tuple(sorted(self.formats.items())))
        self._neg_start: int | None = None
        self._validators: dict[tuple, tuple] = {}  # (schema, its validator) by (id(schema), base, formats)
        #: (schema, verdict) by (id(schema), base, formats, the value as JSON text): disjointness checks
        #: of a oneOf validate the same few values against the same branches again and again
        self._verdicts: dict[tuple, tuple] = {}
        self._partial: dict[tuple, tuple] = {}  # (schema, it without consumed keywords), see validates
        self._enums: dict[int, tuple] = {}  # large enums' members indexed, see _in_enum
        self._checked: dict[int, Any] = {}  # schema objects check_keywords passed, by identity
        self._no_candidate: dict[tuple, bool] = {}  # see excluded
        self._languages: dict[tuple, Expr | None] = {}  # see string_language
        self._same: dict[tuple[int, int], tuple[Any, Any, bool]] = {}  # see _same_json

    # ------------------------------------------------------------------ helpers
    def fail(self, message: str, keyword: str, pointer: str) -> None:
        """Raise SchemaError unless ``keyword`` is ignored (then return quietly)."""
        if keyword in self.ignore:
            return
        raise SchemaError(message, keyword=keyword, pointer=pointer)

    def new_name(self, stem: str = "s") -> str:
        self._counter += 1
        if len(self.rules) > self.max_rules:
            raise LimitExceededError(f"grammar has more than {self.max_rules} rules", limit="max_rules")
        return f"{stem}{self._counter}"

    def shared(self, e: Expr, stem: str) -> Expr:
        """``e`` as a named rule (a Ref), unless it is small; equal expressions share a rule."""
        if isinstance(e, Ref) or _small(e):
            return e
        name = self._shared.get(e)
        if name is None:
            name = self.new_name(stem)
            self._shared[e] = name
            self.rules[name] = e
        return Ref(name)

    def string_value(self, content: Expr) -> Expr:
        """The JSON string of ``content`` (:func:`.pattern_lengths.quoted_string`), the patterns and
        other languages it names as rules inlined where they name none themselves: a counted length
        and a pattern are then one automaton built in layers."""
        if type(content) is And:
            items = tuple(self._inlined(it) for it in content.items)  # type: ignore[attr-defined]
            if any(a is not b for a, b in zip(items, content.items)):  # type: ignore[attr-defined]
                content = and_(*items)
        return quoted_string(content)

    def _inlined(self, e: Expr) -> Expr:
        """``e`` with its references to this schema's reference-free rules replaced by their bodies."""
        t = type(e)
        if t is Ref:
            body = self.rules.get(e.name)  # type: ignore[attr-defined]
            return body if body is not None and is_ref_free(body) else e
        if t is Not:
            inner = self._inlined(e.item)  # type: ignore[attr-defined]
            return e if inner is e.item else not_(inner)  # type: ignore[attr-defined]
        if t is Alt or t is And:
            items = tuple(self._inlined(it) for it in e.items)  # type: ignore[attr-defined]
            if all(a is b for a, b in zip(items, e.items)):  # type: ignore[attr-defined]
                return e
            return alt(*items) if t is Alt else and_(*items)
        return e

    def any_value(self) -> Expr:
        if self._any is None:
            ref, rules = self.lex.any_value_rules("json")
            self.rules.update(rules)
            self._any = ref
        return self._any

    def synthetic_not(self, schema: Any) -> dict:
        """A stable ``{"not": schema}`` object (stable identity keeps rule memoization working)."""
        k = ("not", id(schema))
        d = self._synthetic.get(k)
        if d is None:
            d = {"not": schema}
            self._synthetic[k] = d
            self._keep.append(schema)
        return d

    def regex(self, pattern: Any, keyword: str, pointer: str) -> Expr | None:
        """The unanchored (search) language of an ECMA-262 pattern over JSON string content."""
        if not isinstance(pattern, str):
            raise SchemaError("pattern must be a string", keyword=keyword, pointer=pointer)
        if pattern in self._regex_cache:
            return self._regex_cache[pattern]
        try:
            e = _search_expr(pattern)
        except GrammarError as exc:
            self.fail(f"pattern {pattern!r} cannot be compiled: {exc}", keyword, pointer)
            return None
        e = self.shared(e, "re")
        self._regex_cache[pattern] = e
        return e

    def asserts_format(self, name: Any) -> bool:
        """Whether ``format: name`` constrains strings: a format the caller defined always (unless
        ``format`` is ignored), any other under ``strict_format``."""
        if "format" in self.ignore:
            return False
        return self.strict_format or (isinstance(name, str) and name in self.formats)

    def format(self, name: Any, pointer: str) -> Expr | None:
        """The string content of ``format: name``; an unknown format is refused (None where
        ``format`` is ignored). Kept unnamed: a reference-free string language is built once per
        process, whatever schema it comes from (see ``standalone_dfa``). A format the caller defined
        is its pattern matched whole."""
        custom = self.formats.get(name) if isinstance(name, str) else None
        if custom is not None:
            try:
                return _fullmatch_expr(custom)
            except GrammarError as exc:
                raise SchemaError(f"the pattern {custom!r} given for format {name!r} cannot be compiled: {exc}",
                                  keyword="format", pointer=pointer) from None
        e = format_expr(name, self.draft) if isinstance(name, str) else None
        if e is None:
            why = UNSUPPORTED_FORMATS.get(name) if isinstance(name, str) else None
            self.fail(f"unsupported format {name!r}: {why}" if why else
                      f"unknown format {name!r} (strict_format=False treats formats as annotations)", "format", pointer)
        return e

    def _format_checker(self) -> Any:
        """The ``jsonschema`` format checker of this conversion: the built-in formats under
        ``strict_format``, and the caller's own (their patterns matched whole, as the grammar does)."""
        import jsonschema

        fc = jsonschema.FormatChecker() if self.strict_format else jsonschema.FormatChecker(formats=())
        for name in self.formats:
            fc.checks(name)(lambda value, name=name: self._custom_format_holds(name, value))
        return fc

    def _custom_format_holds(self, name: str, value: Any) -> bool:
        from ..ir import Grammar
        from ..reference import accepts

        if not isinstance(value, str):
            return True
        g = self._format_grammars.get(name)
        if g is None:
            g = self._format_grammars[name] = Grammar({"root": self.format(name, "#")})
        return accepts(g, json.dumps(value, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass"))

    def py_search(self, pattern: str, text: str, keyword: str, pointer: str) -> bool:
        """Does ``pattern`` match somewhere in the concrete string ``text``?"""
        try:
            return re.search(pattern, text) is not None
        except re.error as exc:
            raise SchemaError(f"invalid pattern {pattern!r}: {exc}", keyword=keyword, pointer=pointer) from exc

    def validates(self, value: Any, node: Node) -> bool:
        """Exact check of a concrete value against one node: directly for type/enum/const schemas
        (:func:`_quick_validates`), else with a ``jsonschema`` validator made once per node.

        Keywords the node has consumed are left out: the conjunction it is part of stands for them
        (an ``anyOf``/``oneOf`` by one branch, a ``not`` or dependency by what it expanded into,
        an ``allOf`` or ``$ref`` by the nodes of their schemas, an ignored keyword by nothing). A
        ``oneOf`` checked whole -- itself or inside an ``allOf`` -- would wrongly say a value both
        branches hold is in neither, and disjointness tests would believe overlapping branches
        disjoint."""
        schema = node.schema
        if isinstance(schema, bool):
            return schema
        if node.consumed:
            schema = self._unconsumed(schema, node.consumed)
        quick = _quick_validates(value, schema, self.draft, self._enums)
        if quick is not None:
            return quick
        formats = ("format" not in self.ignore) and (self.strict_format or bool(self.formats))
        key = (id(schema), node.base, formats)
        try:
            text = json.dumps(value, sort_keys=True)  # (1 and 1.0 differ: they may, in draft 4)
        except (TypeError, ValueError):
            text = None
        if text is not None:
            known = self._verdicts.get((*key, text))
            if known is not None and known[0] is schema:
                return known[1]
        try:
            hit = self._validators.get(key)
            if hit is None or hit[0] is not schema:
                fc = None
                if formats:
                    fc = self._format_checker()
                hit = self._validators[key] = (schema, self.refs.validator(schema, node.base, fc))
            verdict = bool(hit[1].is_valid(value))
        except Exception as exc:
            raise SchemaError(f"cannot validate value {value!r}: {exc}", pointer=node.ptr) from exc
        if text is not None:
            self._verdicts[(*key, text)] = (schema, verdict)
        return verdict

    def _unconsumed(self, schema: dict, consumed: frozenset) -> dict:
        """``schema`` without the keywords in ``consumed`` (``then``/``else`` go with ``if``); the
        same dict each time (validators and verdicts are cached by its identity)."""
        key = (id(schema), consumed)
        hit = self._partial.get(key)
        if hit is None or hit[0] is not schema:
            drop = consumed | ({"then", "else"} if "if" in consumed else set())
            hit = self._partial[key] = (schema, {k: v for k, v in schema.items() if k not in drop})
        return hit[1]

    # ------------------------------------------------------------------ flattening
    def expand(self, schema: Any, base: str, ptr: str, out: list[Node], seen: set | None = None,
               based: bool = False) -> bool:
        """Append the conjunction of ``schema`` to ``out``; False if it is unsatisfiable. ``based``:
        ``base`` is the one in force inside ``schema`` already (a resolved reference's target: its
        own id was applied by the lookup, and a relative id must not be applied twice)."""
        if seen is None:
            seen = {n.key for n in out}
        if schema is True:
            return True
        if schema is False:
            return False
        if not isinstance(schema, dict):
            raise SchemaError(f"a schema must be an object or a boolean, not {type(schema).__name__}", pointer=ptr)
        if not based:
            base = self.refs.base_of(schema, base)
        inner = schema.get("not")
        double_not = isinstance(inner, dict) and "not" not in self.ignore and _only(inner, "not")
        ref = schema.get("$ref")
        legacy_ref = ref is not None and self.draft in ("draft4", "draft6", "draft7")
        # what the conjunction spells out beside the node, left out of the node's own checks (see
        # validates): not(not(X)) is X's nodes, a followed $ref its target's, allOf its members'
        spelled: set[str] = set()
        if double_not:
            spelled.add("not")
        if ref is not None and not legacy_ref and "$ref" not in self.ignore:
            spelled.add("$ref")
        if "allOf" in schema and "allOf" not in self.ignore:
            spelled.add("allOf")
        node = Node(schema, base, ptr, frozenset(spelled))
        if node.key in seen:
            return True
        seen.add(node.key)
        if double_not:
            b2 = self.refs.base_of(inner, base)
            if not self.expand(inner["not"], b2, f"{ptr}/not/not", out, seen):
                return False
        # (a node that is only a followed $ref adds nothing of its own: left out, every use of the
        # same target is the same conjunction, hence the same rule)
        at = None
        if not legacy_ref and not (ref is not None and "$ref" not in self.ignore and _only(schema, "$ref")):
            at = len(out)
            out.append(node)
        if ref is not None and "$ref" not in self.ignore:
            target, tbase = self.refs.resolve(ref, base, ptr)
            self._keep.append(target)
            tptr = ref if ref.startswith("#") else f"{ptr}/$ref"
            if not self.expand(target, tbase, tptr, out, seen, based=True):
                return False
            if legacy_ref:
                return True
        all_of = schema.get("allOf")
        if all_of is not None and "allOf" not in self.ignore:
            if not isinstance(all_of, list):
                raise SchemaError("allOf must be an array", keyword="allOf", pointer=ptr)
            for i, sub in enumerate(all_of):
                if not self.expand(sub, base, f"{ptr}/allOf/{i}", out, seen):
                    return False
        if at is not None and _written_before_properties(schema, _REF_ALL_OF):
            out.append(out.pop(at))  # (members in the order the document writes them: see value order)
        return True

    def nodes_of(self, schema: Any, base: str, ptr: str) -> list[Node] | None:
        out: list[Node] = []
        return out if self.expand(schema, base, ptr, out) else None

    # ------------------------------------------------------------------ rules
    def value_of(self, schema: Any, base: str, ptr: str) -> Expr:
        nodes = self.nodes_of(schema, base, ptr)
        return NOTHING if nodes is None else self.value(nodes)

    def value(self, nodes: list[Node]) -> Expr:
        """The rule (a Ref) for JSON values satisfying every node of ``nodes``."""
        key = tuple([n.key for n in nodes])
        name = self.memo.get(key)
        if name is not None:
            if self.in_progress.get(name) == self.depth:
                ptr = nodes[0].ptr if nodes else "#"
                raise SchemaError("schema refers to itself without nesting (left recursion)",
                                  keyword="$ref", pointer=ptr)
            return Ref(name)
        if not nodes:
            return self.any_value()
        if self._neg_start is not None and len(self.memo) - self._neg_start > MAX_ONEOF_RULES:
            raise LimitExceededError("oneOf exclusivity expands into too many rules", limit="max_oneof_rules")
        name = self.new_name("s")
        self.memo[key] = name
        self.in_progress[name] = self.depth
        if len(self.in_progress) > MAX_OPEN_VALUES:
            raise SchemaError(f"the schema expands into more than {MAX_OPEN_VALUES} values inside one "
                              "another: it refers to itself without end (left recursion) or nests too deeply",
                              keyword="$ref", pointer=nodes[0].ptr)
        try:
            body = self.build(nodes)
        finally:
            del self.in_progress[name]
        # Schemas repeat themselves ({"type": ["string", "null"]} for every property): a body equal
        # to an earlier rule's is that rule (one rule in the automaton, not one per property). This
        # rule's name stays defined (the body may have referred to it) but is no longer handed out.
        same = self._shared.setdefault(body, name)
        if same != name:
            self.rules[name] = Ref(same)
            self.memo[key] = same
            return Ref(same)
        self.rules[name] = body
        return Ref(name)

    def is_empty(self, e: Expr) -> bool:
        """Whether ``e`` is the empty language as built so far: NOTHING, or a reference to a rule
        whose body is (a value no JSON satisfies). A rule still being built is not known empty."""
        while type(e) is Ref:
            e = self.rules.get(e.name)  # type: ignore[attr-defined,assignment]
        return e == NOTHING

    def child_value(self, nodes: list[Node] | None) -> Expr:
        """A nested value (inside an array or object)."""
        if nodes is None:
            return NOTHING
        self.depth += 1
        try:
            return self.value(nodes)
        finally:
            self.depth -= 1

    # ------------------------------------------------------------------ the conjunction
    def check_keywords(self, node: Node) -> None:
        """Refuse a keyword that cannot be enforced exactly (each schema object checked once: the
        conjunctions a distribution makes hold the same objects, level after level)."""
        s = node.schema
        if self._checked.get(id(s)) is s:
            return
        for kw in _UNSUPPORTED:
            if kw not in s or kw in self.ignore:
                continue
            v = s[kw]
            if kw.startswith("unevaluated") and (v is True or v == {}):
                continue
            if kw in ("dependentRequired", "dependentSchemas", "dependencies") and (not v):
                continue
            raise SchemaError(f"{kw} cannot be enforced exactly", keyword=kw, pointer=node.ptr)
        self._checked[id(s)] = s

    def build(self, nodes: list[Node]) -> Expr:
        if len(nodes) == 1:  # {"type": "string", "description": ...}: most properties, built once
            s = nodes[0].schema
            t = s.get("type")
            if type(t) is str and t in _SCALAR_TYPES and _SCALAR_KEYS.issuperset(s):
                key = (t, self._scalar_config)
                body = _SCALAR_BODIES.get(key)
                if body is None:
                    body = self._scalar_bodies.get(t)
                if body is None:
                    body = self._build(nodes)
                    if is_ref_free(body):
                        if len(_SCALAR_BODIES) >= 256:  # (bounded: options are the caller's to vary)
                            _SCALAR_BODIES.clear()
                        _SCALAR_BODIES[key] = body
                    else:  # (a body naming a rule of this grammar is this grammar's)
                        self._scalar_bodies[t] = body
                return body
        return self._build(nodes)

    def _build(self, nodes: list[Node]) -> Expr:
        for n in nodes:
            self.check_keywords(n)
        # 0. strings only, joined by anyOf/not/if: one language (not distributed: see string_language)
        if any(kw in n.schema and kw not in n.consumed and kw not in self.ignore
               for n in nodes for kw in ("anyOf", "not", "if")) and self.allowed_types(nodes) == _STRING_ONLY:
            content = self.string_language(nodes)
            if content is not None:
                return self.string_value(content)
        # 1. disjunctions
        for idx, n in enumerate(nodes):
            s = n.schema
            for kw in ("anyOf", "oneOf", "if"):
                if kw in s and kw not in n.consumed:
                    return self.distribute(nodes, idx, kw)
        # 2. negations
        neg = Negation(set(), [])
        for idx, n in enumerate(nodes):
            for kw in _DEPENDENCY_KWS:
                if kw in n.schema and kw not in n.consumed and kw not in self.ignore:
                    return self.dependencies(nodes, idx, kw)
        for idx, n in enumerate(nodes):
            if ("not" in n.schema and "not" not in self.ignore and "not" not in n.consumed
                    and some_member(n.schema) is None):  # (that one the object builder enforces)
                r = self.negate(n.schema["not"], n.base, f"{n.ptr}/not", types=self.allowed_types(nodes))
                if r is None:
                    continue
                if r == "all":
                    return NOTHING
                if r.positive is not None:
                    done = Node(n.schema, n.base, n.ptr, n.consumed | {"not"})
                    rest = [*nodes[:idx], done, *nodes[idx + 1 :]]
                    if not self.expand(r.positive, n.base, f"{n.ptr}/not", rest):
                        return NOTHING
                    return self.value(rest)
                neg.merge(r)
        # 3. finite value sets
        finite = self.finite_candidates(nodes)
        if finite is not None:
            vals = [v for v in finite if self._ok_value(v, nodes, neg)]
            integers_only = "fraction" not in self.allowed_types(nodes)
            return alt(*(self.literal(v, integers_only) for v in vals))
        # 4. types
        types = self.allowed_types(nodes) - neg.types
        parts: list[Expr] = []
        neg_keys = {json_key(v) for v in neg.values}
        if "null" in types and ("null",) not in neg_keys:
            parts.append(lit("null"))
        if "boolean" in types:
            for b in (True, False):
                if ("bool", b) not in neg_keys:
                    parts.append(lit("true" if b else "false"))
        if "integer" in types or "fraction" in types:
            parts.append(self.number(nodes, types, [v for v in neg.values if json_key(v)[0] == "num"],
                                     neg.num_formulas))
        if "string" in types:
            excluded = [v for v in neg.values if isinstance(v, str)]
            value = None if excluded or neg.str_contents else self.long_string(nodes)
            if value is None:
                content = self.string_content(nodes, excluded, neg.str_contents)
                value = None if content is None else self.string_value(content)
            if value is not None:
                parts.append(value)
        for kind, tag in (("array", "arr"), ("object", "obj")):
            if kind in types:
                parts.append(self._structures(nodes, kind, [v for v in neg.values if json_key(v)[0] == tag]))
        if len(parts) == 2 and parts[0] == _NULL_LITERAL:  # {"type": ["string", "null"], "maxLength": ...}
            fused = or_null(parts[1])
            if fused is not None:
                return fused
        if len(parts) > 1:  # (an automaton built directly as a rule of its own: the engine may call it)
            parts = [self.shared(p, "v") if type(p) is Special else p for p in parts]
        return alt(*parts)

    def _structures(self, nodes: list[Node], kind: str, excluded: list[Any]) -> Expr:
        """The arrays or objects of the conjunction ``nodes`` (``kind``), but the ``excluded``
        values its ``not`` members name (``const``/``enum``): each is the complement of the schema
        that holds it alone (:meth:`_only`), spelled out keyword by keyword like any ``not``."""
        if not excluded:
            return build_array(self, nodes) if kind == "array" else build_object(self, nodes)
        # (the not members said no more than the values they exclude here: they are consumed)
        rest = [Node(n.schema, n.base, n.ptr, n.consumed | {"not"}) if "not" in n.schema else n for n in nodes]
        rest.append(Node(_TYPE_SCHEMAS[kind], "", nodes[0].ptr))
        rest.extend(Node(self.synthetic_not(self._only(v)), "", f"{nodes[0].ptr}/not") for v in excluded)
        return self.value(rest)

    def _only(self, v: list | dict) -> dict:
        """A schema that holds the array or object ``v`` alone: each item or member ``enum: [x]``
        (``const`` is no keyword in draft 4), the length or the keys fixed."""
        k = ("only", json.dumps(v, sort_keys=True))
        hit = self._synthetic.get(k)
        if hit is None:
            if isinstance(v, list):
                hit = {"type": "array", "items": [{"enum": [x]} for x in v], "additionalItems": False,
                       "minItems": len(v)}
            else:
                hit = {"type": "object", "properties": {key: {"enum": [x]} for key, x in v.items()},
                       "required": list(v), "additionalProperties": False}
            self._synthetic[k] = hit
        return hit

    def literal(self, v: Any, integer_type: bool) -> Expr:
        """Every accepted spelling of the value ``v``; a number where the type is integer only is
        spelled without a fraction or exponent in draft 4 (``1.0`` is a number there, not an integer)."""
        if integer_type and self.draft == "draft4" and isinstance(v, int | float) and not isinstance(v, bool):
            return self.lex.number_literal(v, plain_integers=True)
        return self.lex.value_literal(v)

    def _ok_value(self, v: Any, nodes: list[Node], neg: Negation) -> bool:
        k = json_key(v)
        if any(json_key(x) == k for x in neg.values):
            return False
        t = _value_types(v)
        if not (t - neg.types):
            return False
        return all(self.validates(v, n) for n in nodes)

    # ------------------------------------------------------------------ disjunctions
    def distribute(self, nodes: list[Node], idx: int, kw: str) -> Expr:
        n = nodes[idx]
        s = n.schema
        done = Node(n.schema, n.base, n.ptr, n.consumed | {kw})
        rest = [*nodes[:idx], done, *nodes[idx + 1 :]]
        if kw == "if":
            return self.if_then_else(rest, n)
        branches = s[kw]
        if kw in self.ignore:
            return self.value(rest)
        if not isinstance(branches, list) or not branches:
            raise SchemaError(f"{kw} must be a non-empty array", keyword=kw, pointer=n.ptr)
        alts: list[list[Node]] = []
        raws: list[Any] = []
        # a branch's members come where the node stands in the conjunction: before the node's own
        # when the keyword is written before its properties, else after them -- right after them when
        # no members of the node's allOf/$ref follow it (``allOf: [{oneOf: ...}, {properties: ...}]``
        # puts the branch first), else after every node (where those end is not kept)
        if _written_before_properties(s, (kw,)):
            at = idx
        else:
            at = len(rest) if any(k in s for k in _REF_ALL_OF) else idx + 1
        keys = {m.key for m in rest}
        for i, sub in enumerate(branches):
            b: list[Node] = []
            ok = self.expand(sub, n.base, f"{n.ptr}/{kw}/{i}", b, set(keys))
            b = [*rest[:at], *b, *rest[at:]]
            if ok and not self.excluded(b):
                alts.append(b)
                raws.append(sub)
        if kw == "oneOf":
            return self.one_of(alts, n, raws)
        return self.union([self.value(b) for b in alts])

    def dependencies(self, nodes: list[Node], idx: int, kw: str) -> Expr:
        """dependentRequired/dependentSchemas/dependencies as 'absent, or present with more'."""
        n = nodes[idx]
        dep = n.schema[kw]
        key = (id(n.schema), kw)
        syn = self._synthetic.get(key)
        if syn is None:
            if not isinstance(dep, dict):
                raise SchemaError(f"{kw} must be an object", keyword=kw, pointer=n.ptr)
            parts = []
            for name, v in dep.items():
                absent = {"properties": {name: False}}
                if isinstance(v, list) and kw != "dependentSchemas":
                    present: dict = {"required": [name, *v]}
                elif kw != "dependentRequired":
                    present = {"required": [name], "allOf": [v]}
                else:
                    raise SchemaError(f"{kw} values must be arrays", keyword=kw, pointer=n.ptr)
                parts.append({"anyOf": [absent, present]})
            syn = {"allOf": parts}
            self._synthetic[key] = syn
        done = Node(n.schema, n.base, n.ptr, n.consumed | {kw})
        rest = [*nodes[:idx], done, *nodes[idx + 1 :]]
        if not self.expand(syn, n.base, f"{n.ptr}/{kw}", rest):
            return NOTHING
        return self.value(rest)

    def one_of(self, alts: list[list[Node]], n: Node, raws: list[Any]) -> Expr:
        """Exactly one branch: disjoint branches directly, else per JSON type where exact."""
        def all_disjoint(bs: list[list[Node]]) -> bool:
            return all(disjoint(self, bs[i], bs[j]) for i in range(len(bs)) for j in range(i + 1, len(bs)))

        if len(alts) <= 1 or all_disjoint(alts):
            return alt(*(self.value(b) for b in alts))
        parts: list[Expr] = []
        for t in ("null", "boolean", "integer", "fraction", "string", "array", "object"):
            bi = [i for i, b in enumerate(alts) if t in self.allowed_types(b)]
            bt = [alts[i] for i in bi]
            if not bt:
                continue
            restricted = []
            for b in bt:
                rb = list(b)
                if self.expand(_TYPE_SCHEMAS[t], "", f"{n.ptr}/oneOf", rb):
                    restricted.append(rb)
            if len(restricted) <= 1 or all_disjoint(restricted):
                parts.extend(self.value(b) for b in restricted)
                continue
            finite = [self.finite_values(b) for b in restricted]
            if all(f is not None for f in finite):
                seen = _branch_counts(finite)
                parts.extend(self.literal(v, t == "integer") for v, c in seen.values() if c == 1)
                continue
            if sum(f is None for f in finite) == 1:
                # one branch is not a finite set: it without the others' values, and each of those
                # values that exactly one branch holds
                k = finite.index(None)
                seen = _branch_counts(finite[:k] + finite[k + 1:])
                parts.extend(self.literal(v, t == "integer") for v, c in seen.values()
                             if c == 1 and not all(self.validates(v, nd) for nd in restricted[k]))
                conj = list(restricted[k])
                if seen:
                    others = {"enum": [v for v, _ in seen.values()]}
                    conj.append(Node(self.synthetic_not(others), "", f"{n.ptr}/oneOf"))
                parts.append(self.value(conj))
                continue
            if t in ("integer", "fraction", "string") and all(self._plain(b, t) for b in restricted):
                if t == "string":
                    cs = [self.string_content(b) for b in restricted]
                    cs = [c for c in cs if c is not None]
                    for i, c in enumerate(cs):
                        others = [d for j, d in enumerate(cs) if j != i]
                        body = and_(c, not_(alt(*others))) if others else c
                        parts.append(seq(lit('"'), body, lit('"')))
                else:
                    fs = [self.num_formula(b, frozenset({t})) for b in restricted]
                    exactly = num.Or(tuple(
                        num.And((f, num.Not(num.Or(tuple(g for j, g in enumerate(fs) if j != i)))))
                        for i, f in enumerate(fs)
                    ))
                    e, rules = num.number_expr(exactly, rule_prefix=self.new_name("n"),
                                               **self._numeral_shape(frozenset({t})))
                    self.rules.update(rules)
                    parts.append(e)
                continue
            if t in ("object", "array") and len(bt) <= 6:
                # exactly one: branch i and not any other branch it may overlap (negations in De
                # Morgan form; a branch disjoint from i is excluded by i already, and each negation
                # spelled out multiplies the conjunctions i is distributed into)
                outer = self._neg_start is None
                if outer:
                    self._neg_start = len(self.memo)
                try:
                    apart = {(a, b) for a, b in itertools.combinations(range(len(bi)), 2)
                             if disjoint(self, restricted[a], restricted[b])}
                    for a, (i, rb) in enumerate(zip(bi, restricted)):
                        conj = list(rb)
                        for b, j in enumerate(bi):
                            if j != i and (min(a, b), max(a, b)) not in apart:
                                conj.append(Node(self.synthetic_not(raws[j]), n.base, f"{n.ptr}/oneOf/{j}"))
                        parts.append(self.value(conj))
                finally:
                    if outer:
                        self._neg_start = None
                continue
            raise SchemaError(f"oneOf branches may both match a {t if t != 'fraction' else 'number'}; "
                              "exclusivity cannot be enforced", keyword="oneOf", pointer=n.ptr)
        return alt(*parts)

    def _plain(self, nodes: list[Node], t: str) -> bool:
        """Only type/numeric/string keywords, for a number or string type ``t`` (so the per-type
        language is a formula or regular); object and array keywords say nothing about ``t``."""
        allowed = ANNOTATIONS | _NUM_KWS | _STR_KWS | _STRUCTURE_KWS | {"type", "$ref", "allOf"}
        for nd in nodes:
            for k in nd.schema:
                if k in allowed or k in nd.consumed or k in self.ignore or not _is_keyword(k):
                    continue
                if k == "not" and nd.schema is _TYPE_SCHEMAS["fraction"]:
                    continue
                if t == "string" and k in _NUM_KWS:
                    continue
                return False
        return True

    def if_then_else(self, rest: list[Node], n: Node) -> Expr:
        s = n.schema
        cond = s["if"]
        if "if" in self.ignore or ("then" not in s and "else" not in s):
            return self.value(rest)
        then_s = s.get("then", True)
        else_s = s.get("else", True)
        out: list[Expr] = []
        b1 = list(rest)
        if not self.expand(cond, n.base, f"{n.ptr}/if", b1) or self.excluded(b1):
            # the condition holds for no value of the rest (a discriminator's other value, where one
            # is taken already): the else branch, with nothing of the condition's complement to add --
            # spelled out, it split the conjunction again at every later pair of a chain
            b2 = list(rest)
            if not self.expand(else_s, n.base, f"{n.ptr}/else", b2) or self.excluded(b2):
                return NOTHING
            return self.value(b2)
        if self.expand(then_s, n.base, f"{n.ptr}/then", b1) and not self.excluded(b1):
            out.append(self.value(b1))
        neg = self.negate(cond, n.base, f"{n.ptr}/if", keyword="if", types=self.allowed_types(rest))
        b2 = list(rest)
        if neg is None:
            return self.union(out)  # (only when 'if' is ignored)
        if neg != "all":
            if neg.positive is not None:  # (the complement spelled out now, not at the end: see excluded)
                pos = neg.positive
                if isinstance(pos, dict) and len(pos) == 1 and isinstance(pos.get("anyOf"), list) \
                        and len(pos["anyOf"]) == 1:
                    pos = pos["anyOf"][0]
                ok = self.expand(pos, n.base, f"{n.ptr}/if", b2)
            else:
                b2.append(Node(self.synthetic_not(cond), n.base, f"{n.ptr}/if"))
                ok = True
            if ok and self.expand(else_s, n.base, f"{n.ptr}/else", b2) and not self.excluded(b2):
                out.append(self.value(b2))
        return self.union(out)

    def excluded(self, nodes: list[Node]) -> bool:
        """Whether the conjunction ``nodes`` is found empty before it is built: its types and the
        types its ``not: {"type": ...}`` members take away leave none (an ``if``'s complement
        spelled out is ``anyOf [{"not": {"type": "object"}}, ...]``: beside ``"type": "object"``,
        a branch that used to be built out through every later pair before it was found empty --
        2**8 conjunctions for 8 pairs); or it allows objects only, and a property it requires has
        a finite set of candidate values (``const``/``enum``) of which none holds for all its
        ``properties`` schemas. Sound (True only when no value satisfies the conjunction: other
        constraints only remove more), and cheap, so that a chain of ``if``/``then`` pairs on one
        discriminating property (``"if": {"properties": {"type": {"const": ...}}}``) is cut where
        two of its conditions meet, not built out to 2**n ends."""
        types = self.allowed_types(nodes)
        if "not" not in self.ignore:
            for n in nodes:
                inner = n.schema.get("not")
                if ("not" not in n.consumed and type(inner) is dict and "type" in inner
                        and all(k == "type" or k in ANNOTATIONS or not _is_keyword(k) for k in inner)):
                    types = types - self.allowed_types([Node(inner, n.base, f"{n.ptr}/not")])
        if not types:
            return True
        if "required" in self.ignore or "properties" in self.ignore or types - _OBJECT_ONLY:
            return False
        required: list[str] = []
        for n in nodes:
            req = n.schema.get("required")
            if type(req) is list:
                required.extend(r for r in req if type(r) is str and r not in required)
        for name in required:
            holders = [n for n in nodes if type(props := n.schema.get("properties")) is dict and name in props]
            if not holders:
                continue
            # (remembered by the nodes that hold the property: a chain's conjunctions share most)
            key = (name, *[n.key for n in holders])
            none = self._no_candidate.get(key)
            if none is None:
                none = self._no_candidate[key] = self._no_candidate_for(name, holders)
            if none or (len(holders) > 1 and self._fails_its_own_schema(name, holders)):
                return True
        return False

    def _fails_its_own_schema(self, name: str, holders: list[Node]) -> bool:
        """Whether one of ``holders`` says property ``name`` fails a schema (``{"not": X}``) another
        gives it (``X``, equal as JSON and read from the same base): the complement of a branch's
        property beside a branch that declares it alike, as an overlapping oneOf of objects spells
        "this branch and not that one" -- each such conjunction, built, is an object of its own."""
        negated = [(n.base, ps["not"]) for n in holders
                   if type(ps := n.schema["properties"][name]) is dict and len(ps) == 1 and "not" in ps]
        if not negated or "not" in self.ignore:
            return False
        for n in holders:
            ps = n.schema["properties"][name]
            if any(base == n.base and self._same_json(x, ps) for base, x in negated):
                return True
        return False

    def _same_json(self, a: Any, b: Any) -> bool:
        """``a`` and ``b`` are the same JSON (remembered by identity: the schemas are kept alive)."""
        if a is b:
            return True
        key = (id(a), id(b))
        hit = self._same.get(key)
        if hit is None or hit[0] is not a or hit[1] is not b:
            try:
                same = json_equal(a, b)
            except TypeError:  # (not JSON)
                same = False
            hit = self._same[key] = (a, b, same)
        return hit[2]

    def _no_candidate_for(self, name: str, holders: list[Node]) -> bool:
        """Whether property ``name``'s schemas in ``holders`` admit no value: one is ``false``, or
        they have finite candidates (``const``/``enum``) none of which all of them accept."""
        sub: list[Node] = []
        for n in holders:
            if not self.expand(n.schema["properties"][name], n.base, f"{n.ptr}/properties/{_esc(name)}", sub):
                return True
        values = self.finite_candidates(sub)
        return values is not None and not any(all(self.validates(v, x) for x in sub) for v in values)

    def union(self, values: list[Expr]) -> Expr:
        """The alternation of ``values`` without those known empty (a branch of a distributed
        ``anyOf``/``if`` whose conjunction no value satisfies: ``allOf`` of ``if``/``then`` pairs
        that exclude one another make most of their combinations so)."""
        return alt(*(v for v in values if not self.is_empty(v)))

    def negate(self, schema: Any, base: str, ptr: str, keyword: str = "not",
               types: frozenset[str] = ALL_TYPES) -> Negation | str | None:
        """The complement of ``schema`` when its keywords are type, value, numeric or string ones,
        else spelled keyword by keyword (:meth:`de_morgan`) among values of ``types`` (the JSON
        types the conjunction it is part of allows: an object keyword's complement holds objects
        only, so beside ``"type": "array"`` it is empty)."""
        if schema is True:
            return "all"
        if schema is False:
            return Negation(set(), [])
        nodes = self.nodes_of(schema, base, ptr)
        if nodes is None:
            return Negation(set(), [])
        allowed = ANNOTATIONS | _NUM_KWS | _STR_KWS | {"type", "const", "enum", "$ref", "allOf"}
        bad = [k for nd in nodes for k in nd.schema if k not in allowed and _is_keyword(k)
               and k not in self.ignore and k not in nd.consumed]
        if bad:
            pos = self.de_morgan(schema, nodes, keyword, ptr, types)
            if pos is not None:
                return Negation(set(), [], positive=pos)
            self.fail(f"'{keyword}' of a schema using {bad[0]!r} cannot be enforced exactly", keyword, ptr)
            return None
        finite = self.finite_candidates(nodes)
        if finite is not None:
            return Negation(set(), [v for v in finite if all(self.validates(v, nd) for nd in nodes)])
        types = set(self.allowed_types(nodes))
        out = Negation(set(), [])
        has_num = any(k in nd.schema and k not in self.ignore for nd in nodes for k in _NUM_KWS)
        has_str = any(k in nd.schema and k not in self.ignore for nd in nodes for k in _STR_KWS)
        for t in types:
            if t in ("integer", "fraction") and has_num:
                continue
            if t == "string" and has_str:
                content = self.string_content(nodes)
                if content is not None:
                    out.str_contents.append(content)
                continue
            out.types.add(t)
        if has_num and types & {"integer", "fraction"}:
            ft = frozenset(types)
            out.num_formulas.append((self.num_formula(nodes, ft), self._numeral_shape(ft)))
        return out

    def de_morgan(self, key_schema: Any, nodes: list[Node], keyword: str, ptr: str,
                  types: frozenset[str] = ALL_TYPES) -> Any:
        """A schema for the complement of the conjunction ``nodes`` among values of ``types``: the
        ``not`` of its type, value, number and string keywords, or of one of its other keywords
        (see :mod:`.complement`)."""
        k = ("neg", id(key_schema), types)
        if k in self._synthetic:
            return self._synthetic[k]
        basic_kws = _NUM_KWS | _STR_KWS | {"type", "const", "enum"}
        branches: list[Any] = []
        for nd in nodes:
            sch = nd.schema
            basic = {kw: v for kw, v in sch.items() if kw in basic_kws and kw not in self.ignore}
            if basic:
                branches.append({"not": basic})
            for kw, v in sch.items():
                if kw in basic_kws or kw in ANNOTATIONS or kw in self.ignore or kw in nd.consumed:
                    continue
                if kw in ("$ref", "allOf") or not _is_keyword(kw):
                    continue
                extra = keyword_complement(kw, v, sch, self.draft, self.ignore, types)
                if extra is None:
                    self.fail(f"'{keyword}' of a schema using {kw!r} cannot be enforced exactly", keyword, ptr)
                    return None
                branches.extend(extra)
        pos: Any = {"anyOf": branches} if branches else False
        self._synthetic[k] = pos
        self._keep.append(key_schema)
        return pos

    # ------------------------------------------------------------------ finite sets and types
    def finite_candidates(self, nodes: list[Node]) -> list[Any] | None:
        """Candidate values from const/enum (None: not a finite set); order from the first node."""
        cands: list[Any] | None = None
        for n in nodes:
            s = n.schema
            for kw in ("const", "enum"):
                if kw not in s or kw in self.ignore:
                    continue
                vals = [s[kw]] if kw == "const" else s[kw]
                if kw == "enum" and not isinstance(vals, list):
                    raise SchemaError("enum must be an array", keyword="enum", pointer=n.ptr)
                try:
                    keys = [json_key(v) for v in vals]
                except (TypeError, ValueError) as exc:
                    raise SchemaError(f"bad {kw} value: {exc}", keyword=kw, pointer=n.ptr) from exc
                if cands is None:
                    cands = []
                    seen: set = set()
                    for v, k in zip(vals, keys):
                        if k not in seen:
                            seen.add(k)
                            cands.append(v)
                else:
                    ks = set(keys)
                    cands = [v for v in cands if json_key(v) in ks]
        if cands is None:
            types = self.allowed_types(nodes)
            if types and types <= {"null", "boolean"}:
                cands = ([None] if "null" in types else []) + ([True, False] if "boolean" in types else [])
        return cands

    def finite_values(self, nodes: list[Node] | None) -> list[Any] | None:
        """The exact finite set of values of a conjunction, or None when not finite (or unknown).

        Candidates come from ``enum``/``const``/``type`` keywords; each is checked against every node
        (:meth:`validates`: a combinator not yet distributed is checked whole, which is exact)."""
        if nodes is None:
            return []
        c = self.finite_candidates(nodes)
        if c is None:
            return None
        return [v for v in c if all(self.validates(v, n) for n in nodes)]

    def allowed_types(self, nodes: list[Node]) -> frozenset:
        types = ALL_TYPES
        for n in nodes:
            t = n.schema.get("type")
            if t is None or "type" in self.ignore:
                continue
            names = t if isinstance(t, list) else [t]
            allowed: set = set()
            for name in names:
                if name not in _TYPE_MAP:
                    if name == "any" and self.draft == "draft4":
                        allowed |= ALL_TYPES
                        continue
                    raise SchemaError(f"unknown type {name!r}", keyword="type", pointer=n.ptr)
                allowed |= _TYPE_MAP[name]
            types = types & allowed
        return types

    # ------------------------------------------------------------------ numbers
    def number(self, nodes: list[Node], types: frozenset, excluded: list[Any],
               excluded_formulas: list[tuple[Any, dict[str, bool]]] | None = None) -> Expr:
        """The numerals of ``types`` that ``nodes`` accept, but for the ``excluded`` values and the
        numbers of the ``excluded_formulas`` (each with the spelling it is limited to, as
        :meth:`_numeral_shape` gives it: a ``not`` of draft 4's integers removes no ``1.0``)."""
        atoms = [self.num_formula(nodes, types)]
        for v in excluded:
            f = to_fraction(v)
            atoms.append(num.Not(num.Range(f, False, f, False)))
        shaped = excluded_formulas or []
        shape = self._numeral_shape(types)
        if not shape and any(sh for _, sh in shaped):  # (draft 4: either spelling, each excluded apart)
            return alt(self._numerals(atoms, shaped, {"plain_integers": True}),
                       self._numerals(atoms, shaped, {"decorated": True}))
        return self._numerals(atoms, shaped, shape)

    def _numerals(self, atoms: list[Any], shaped: list[tuple[Any, dict[str, bool]]],
                  shape: dict[str, bool]) -> Expr:
        """The numerals spelled as ``shape`` says whose value satisfies ``atoms``, less those of each
        excluded formula whose spelling they have."""
        atoms = atoms + [num.Not(fx) for fx, sh in shaped if not sh or sh == shape]
        formula = num.And(tuple(atoms)) if len(atoms) > 1 else atoms[0]
        e, rules = num.number_expr(formula, rule_prefix=self.new_name("n"), **shape)
        self.rules.update(rules)
        return e

    def num_formula(self, nodes: list[Node], types: frozenset) -> Any:
        """The numeric constraints of ``nodes`` (type integer included) as a formula."""
        atoms: list[Any] = []
        for n in nodes:
            s = n.schema
            lo = hi = None
            lo_x = hi_x = False

            def get(kw: str, n: Node = n) -> Fraction | None:
                if kw not in n.schema or kw in self.ignore:
                    return None
                v = n.schema[kw]
                try:
                    return to_fraction(v)
                except (TypeError, ValueError) as exc:
                    raise SchemaError(f"{kw} must be a number", keyword=kw, pointer=n.ptr) from exc

            lo, hi = get("minimum"), get("maximum")
            xlo, xhi = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
            if isinstance(xlo, bool):
                lo_x = xlo and lo is not None
            elif xlo is not None:
                atoms.append(num.Range(get("exclusiveMinimum"), True, None, False))
            if isinstance(xhi, bool):
                hi_x = xhi and hi is not None
            elif xhi is not None:
                atoms.append(num.Range(None, False, get("exclusiveMaximum"), True))
            if lo is not None or hi is not None:
                atoms.append(num.Range(lo, lo_x, hi, hi_x))
            m = get("multipleOf")
            if m is not None:
                if m <= 0:
                    raise SchemaError("multipleOf must be > 0", keyword="multipleOf", pointer=n.ptr)
                atoms.append(num.MultipleOf(m))
        has_int, has_frac = "integer" in types, "fraction" in types
        if has_int and not has_frac:
            atoms.append(num.MultipleOf(Fraction(1)))
        elif has_frac and not has_int and self.draft != "draft4":  # (draft 4: by spelling, _numeral_shape)
            atoms.append(num.Not(num.MultipleOf(Fraction(1))))
        return num.And(tuple(atoms)) if atoms else num.TRUE

    def _numeral_shape(self, types: frozenset) -> dict[str, bool]:
        """Draft 4 tells integers from other numbers by spelling, not value: an integer is a
        numeral without a fraction or exponent (``2.0`` is a number only). The ``number_expr``
        options that say so for numbers of ``types``."""
        if self.draft != "draft4" or ("integer" in types) == ("fraction" in types):
            return {}
        return {"plain_integers": True} if "integer" in types else {"decorated": True}

    # ------------------------------------------------------------------ strings
    def length_bounds(self, nodes: list[Node]) -> tuple[int, int | None]:
        """The ``minLength`` and ``maxLength`` of the conjunction ``nodes`` (None: no maximum)."""
        lo, hi = 0, None
        for n in nodes:
            s = n.schema
            if "minLength" in s and "minLength" not in self.ignore:
                lo = max(lo, _nonneg_int(s["minLength"], "minLength", n.ptr))
            if "maxLength" in s and "maxLength" not in self.ignore:
                v = _nonneg_int(s["maxLength"], "maxLength", n.ptr)
                hi = v if hi is None else min(hi, v)
        return lo, hi

    def long_string(self, nodes: list[Node]) -> Expr | None:
        """The strings of ``nodes`` when only a length past ``lengths.FLAT_MAX_CHARS`` characters
        constrains them: counted in chunks (:func:`.lengths.chunked_string`, whose rules equal
        strings share); else None (a pattern or format is intersected with the content, and an
        intersection's operands must be regular expressions, not calls)."""
        lo, hi = self.length_bounds(nodes)
        if max(lo, hi or 0) <= lengths.FLAT_MAX_CHARS or (hi is not None and lo > hi):
            return None
        for n in nodes:
            s = n.schema
            if ("pattern" in s and "pattern" not in self.ignore) or (
                    "format" in s and self.asserts_format(s["format"])):
                return None
        return lengths.chunked_string(lo, hi, lambda e: self.shared(e, "chunk"))

    def string_language(self, nodes: list[Node], depth: int = 0) -> Expr | None:
        """The contents of the strings the conjunction ``nodes`` allows, as one expression of its
        lengths, patterns and formats joined as its ``anyOf``/``not``/``if`` (and ``allOf``,
        ``$ref``) join them -- not distributed into alternatives of the whole conjunction, whose
        number multiplies with each ``anyOf`` (three ``not`` of ``anyOf`` of three patterns made 81
        intersections of 15,000-49,000 states each, and the grammar was refused after 4.7 s).
        Keywords of other types are vacuous for a string. None where a keyword needs the general
        path (``enum``, ``const``, ``oneOf``, a length past ``lengths.FLAT_MAX_CHARS``) or past
        ``_MAX_LANGUAGE_DEPTH`` nested schemas.

        The top call's language is valid string content; a nested one may hold more byte strings
        (a ``not`` complements over all of them), which the top intersects away. A nested one is
        remembered by its conjunction (schemas a union refers to many times are made once), and a
        conjunction met again inside itself (a reference back through ``anyOf``) takes the general
        path."""
        if depth > _MAX_LANGUAGE_DEPTH:
            return None
        key = (depth == 0, *[n.key for n in nodes])
        if key in self._languages:
            return self._languages[key]
        self._languages[key] = None  # (met again inside itself: the general path)
        out = self._string_language(nodes, depth)
        self._languages[key] = out
        return out

    def _string_language(self, nodes: list[Node], depth: int) -> Expr | None:
        if "string" not in self.allowed_types(nodes):
            return NOTHING
        lo, hi = self.length_bounds(nodes)
        if hi is not None and lo > hi:
            return NOTHING
        if max(lo, hi or 0) > lengths.FLAT_MAX_CHARS:  # (counted in chunks where alone: see long_string)
            return None
        items = [counted_content(lo, hi)] if depth == 0 or lo or hi is not None else []
        for n in nodes:
            s = n.schema
            for kw, v in s.items():
                if (kw in self.ignore or kw in n.consumed or kw in ANNOTATIONS or not _is_keyword(kw)
                        or kw in _VACUOUS_FOR_STRINGS):
                    continue
                ptr = f"{n.ptr}/{kw}"
                if kw == "pattern":
                    part = self.regex(v, kw, n.ptr)
                elif kw == "format":
                    if not self.asserts_format(v):
                        continue
                    part = self.format(v, n.ptr)
                elif kw == "anyOf":
                    if not isinstance(v, list) or not v:
                        raise SchemaError("anyOf must be a non-empty array", keyword=kw, pointer=n.ptr)
                    branches = [self._language_of(sub, n.base, f"{ptr}/{i}", depth) for i, sub in enumerate(v)]
                    if any(b is None for b in branches):
                        return None
                    part = alt(*branches)
                elif kw == "not":
                    inner = self._language_of(v, n.base, ptr, depth)
                    if inner is None:
                        return None
                    part = not_(inner)
                elif kw == "if":
                    cond = self._language_of(v, n.base, ptr, depth)
                    then = self._language_of(s.get("then", True), n.base, f"{n.ptr}/then", depth)
                    other = self._language_of(s.get("else", True), n.base, f"{n.ptr}/else", depth)
                    if cond is None or then is None or other is None:
                        return None
                    part = alt(and_(cond, then), and_(not_(cond), other))
                else:  # (enum, const, oneOf, ...: the general path)
                    return None
                if part is not None:
                    items.append(part)
        if not items:
            return counted_content(0, None)
        return and_(*items) if len(items) > 1 else items[0]

    def _language_of(self, schema: Any, base: str, ptr: str, depth: int) -> Expr | None:
        """:meth:`string_language` of a nested schema (``NOTHING`` for ``false``)."""
        nodes = self.nodes_of(schema, base, ptr)
        return NOTHING if nodes is None else self.string_language(nodes, depth + 1)

    def string_content(self, nodes: list[Node], excluded: list[str] | None = None,
                       excluded_contents: list | None = None) -> Expr | None:
        """Regular language of the JSON string content (between the quotes) allowed by ``nodes``."""
        lo, hi = self.length_bounds(nodes)
        parts: list[Expr] = []
        patterns_only = True  # every part a pattern (made of encoded characters: string content)
        for n in nodes:
            s = n.schema
            if "pattern" in s and "pattern" not in self.ignore:
                r = self.regex(s["pattern"], "pattern", n.ptr)
                if r is not None:
                    parts.append(r)
            if "format" in s and self.asserts_format(s["format"]):
                f = self.format(s["format"], n.ptr)
                if f is not None:
                    parts.append(f)
                    patterns_only = False
        if hi is not None and lo > hi:
            return None
        if parts and patterns_only and lo == 0 and hi is None and not excluded and not excluded_contents:
            # a pattern's language is string content already (its characters are JSON-encoded, no
            # lone surrogate): "any content and the pattern" is the pattern, no intersection to build
            return and_(*parts) if len(parts) > 1 else parts[0]
        base = counted_content(lo, hi)
        items = [base, *parts]
        if excluded:
            items.append(not_(self.shared(alt(*(self.lex.all_spellings(v) for v in excluded)), "x")))
        if excluded_contents:
            items.append(not_(alt(*excluded_contents)))
        return and_(*items) if len(items) > 1 else base


_NULL_LITERAL = lit("null")
#: the body of a schema that is only a scalar type, by type and the converter options that shape it:
#: one node for every schema of the process (equal bodies are then the same node, which the engine's
#: caches find by identity)
_SCALAR_BODIES: dict[tuple, Expr] = {}


def _custom_formats(formats: Any) -> dict[str, str]:
    """The ``formats`` option checked: format names to patterns."""
    if formats is None:
        return {}
    if not isinstance(formats, Mapping):
        raise TypeError(f"formats must map format names to patterns, not {type(formats).__name__}")
    for name, pattern in formats.items():
        if not isinstance(name, str) or not isinstance(pattern, str):
            raise TypeError(f"formats must map format names (str) to patterns (str), not {name!r}: {pattern!r}")
    return dict(formats)


def _small(e: Expr, budget: int = 12) -> bool:
    stack = [e]
    while stack:
        budget -= 1
        x = stack.pop()
        if budget < 0 or isinstance(x, Special):  # a Special stands for a large automaton
            return False
        stack.extend(x.children())
    return True


def _standard_metaschema(uri: Any) -> bool:
    if not isinstance(uri, str):
        return False
    u = uri.rstrip("#").replace("https://", "http://")
    return u.startswith("http://json-schema.org/") and any(
        d in u for d in ("draft-04", "draft-06", "draft-07", "2019-09", "2020-12", "/schema")
    )


_REF_ALL_OF = ("$ref", "allOf")


def _written_before_properties(schema: dict, keywords: tuple[str, ...]) -> bool:
    """Whether one of ``keywords`` comes before ``properties`` in ``schema`` as written. Declared
    members come in the order the document writes them: ``{"allOf": [{"$ref": "#/$defs/base"}],
    "properties": {...}}`` puts the base's members first, ``{"properties": {...}, "allOf": [...]}``
    its own (the conjunction's nodes are ordered so; the object builder takes members node by node)."""
    if "properties" not in schema:
        return False
    for k in schema:
        if k == "properties":
            return False
        if k in keywords:
            return True
    return False


def _only(schema: dict, kw: str) -> bool:
    return kw in schema and all(k == kw or k in ANNOTATIONS or not _is_keyword(k) for k in schema)


def _is_keyword(k: str) -> bool:
    return k in KNOWN_KEYWORDS


def _nonneg_int(v: Any, kw: str, ptr: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int | float) or v < 0 or v != int(v):
        raise SchemaError(f"{kw} must be a non-negative integer", keyword=kw, pointer=ptr)
    return int(v)


#: keywords that can fail a value and that :func:`_quick_validates` leaves to ``jsonschema``
#: (any other keyword but type/enum/const and the combinators is an annotation)
_SLOW_KWS = frozenset({
    "$ref", "$dynamicRef", "$recursiveRef", "if", "then", "else", "dependentSchemas", "dependencies",
    "dependentRequired", "prefixItems", "items", "additionalItems", "contains", "minContains", "maxContains",
    "properties", "patternProperties", "additionalProperties", "propertyNames", "unevaluatedItems",
    "unevaluatedProperties", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxProperties",
    "minProperties", "required", "format", "contentMediaType", "contentEncoding", "contentSchema",
    "disallow", "extends", "divisibleBy"})
_TYPE_NAMES = frozenset({"null", "boolean", "integer", "number", "string", "array", "object"})


def _quick_validates(value: Any, schema: Any, draft: str, enums: dict | None = None) -> bool | None:
    """Validation of ``value`` against a schema of ``type``/``enum``/``const``, annotations and
    combinators of such schemas, without building a validator -- the common case of checking
    enum values -- or None when the schema needs ``jsonschema`` (``enums``: see :func:`_in_enum`)."""
    if isinstance(schema, bool):
        return schema
    if not isinstance(schema, dict) or not _SLOW_KWS.isdisjoint(schema):
        return None
    t = schema.get("type")
    if t is not None:
        names = [t] if isinstance(t, str) else t
        if not isinstance(names, list) or not all(isinstance(x, str) and x in _TYPE_NAMES for x in names):
            return None
        if value is None:
            mine: tuple = ("null",)
        elif isinstance(value, bool):
            mine = ("boolean",)
        elif isinstance(value, int):
            mine = ("integer", "number")
        elif isinstance(value, float):  # draft 4: 1.0 is a number, not an integer
            mine = ("integer", "number") if value.is_integer() and draft != "draft4" else ("number",)
        elif isinstance(value, str):
            mine = ("string",)
        elif isinstance(value, list):
            mine = ("array",)
        elif isinstance(value, dict):
            mine = ("object",)
        else:
            return None
        if not any(x in mine for x in names):
            return False
    if "enum" in schema:
        if not isinstance(schema["enum"], list):
            return None
        if not _in_enum(value, schema["enum"], enums):
            return False
    if "const" in schema and json_key(schema["const"]) != json_key(value):
        return False  # (a draft-4 document comes without its consts: see drafts.without_later_keywords)
    verdict = True
    for kw in ("allOf", "anyOf", "oneOf", "not"):
        if kw not in schema:
            continue
        subs = [schema[kw]] if kw == "not" else schema[kw]
        if not isinstance(subs, list) or not subs:
            return None
        got = [_quick_validates(value, sub, draft, enums) for sub in subs]
        if None in got:
            return None
        n = sum(got)
        if (kw == "allOf" and n < len(got)) or (kw == "anyOf" and n == 0) or (kw == "oneOf" and n != 1) or (
                kw == "not" and n):
            verdict = False
    return verdict


_ENUM_INDEX_MIN = 32  # (smaller enums are scanned)


def _in_enum(value: Any, enum: list, index: dict | None = None) -> bool:
    """Is ``value`` a member of ``enum`` (JSON equality)? A candidate drawn from this very enum is
    found by identity. With ``index`` (a converter's: one schema document, not changed while it
    converts), a large enum's members are indexed once, by identity and by key, under the enum's
    id: checking each of an enum's 5,383 members against it by a scan took 4 of the 8.5 s a compile
    of MaskBench's ``JsonSchemaStore---transcend-yml-schema-v4`` took."""
    if index is None or len(enum) < _ENUM_INDEX_MIN:
        if any(x is value for x in enum):
            return True
        k = json_key(value)
        return any(json_key(x) == k for x in enum)
    entry = index.get(id(enum))
    if entry is None:  # (the entry keeps the enum: its id is not reused while the index lives)
        entry = index[id(enum)] = (enum, frozenset(map(id, enum)), frozenset(map(json_key, enum)))
    return id(value) in entry[1] or json_key(value) in entry[2]


def _branch_counts(value_sets: list) -> dict:
    """``{json_key(v): (v, how many of the sets hold v)}`` over lists of JSON values."""
    seen: dict = {}
    for values in value_sets:
        for v in values:
            k = json_key(v)
            seen[k] = (v, seen.get(k, (v, 0))[1] + 1)
    return seen


def _value_types(v: Any) -> set:
    if v is None:
        return {"null"}
    if isinstance(v, bool):
        return {"boolean"}
    if isinstance(v, int | float):
        return {"integer"} if float(v) == int(v) else {"fraction"}
    if isinstance(v, str):
        return {"string"}
    if isinstance(v, list):
        return {"array"}
    return {"object"}


__all__ += ["ALL_TYPES", "EMPTY"]
