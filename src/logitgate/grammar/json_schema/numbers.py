"""Exact automata for JSON numerals whose *value* satisfies numeric constraints.

A JSON numeral is ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?``. Constraints are
boolean formulas over two atoms:

* :class:`Range` — ``lo <= x <= hi`` with exclusive variants and open ends;
* :class:`MultipleOf` — ``x`` is an integer multiple of a positive rational ``m``
  (``MultipleOf(1)`` is "x is an integer": ``1.0`` counts, as JSON Schema says).

:func:`number_expr` builds a DFA over the numeral's bytes by running one small
comparator per atom digit by digit (exact rational arithmetic, arbitrary bounds and
digit counts), combines them with the formula, minimizes, and emits IR: an inline
expression when the automaton's only cycles are self-loops (ranges), right-linear
rules otherwise (remainder automata).

Exponents: the value of ``d.ddd e N`` depends on the exponent in a way no finite
automaton can follow once bounds are arbitrary, so numerals with an exponent are
accepted only where every atom can decide exactly without it: ranges whose bounds
are 0 or absent (the sign and zero-ness decide) and no ``MultipleOf``. Elsewhere the
language is the exact set of *plain* numerals (no exponent) that satisfy the
formula -- a documented subset: never an invalid value, but ``1e2`` is not accepted
for ``{"type": "integer"}``.

    >>> from fractions import Fraction
    >>> e, rules = number_expr(Range(Fraction(0), False, Fraction(10), False))
    >>> rules
    {}
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise
from math import ceil, floor, gcd
from typing import Union

import numpy as np

from ...errors import LimitExceededError
from ..graphs import strongly_connected_components
from ..ir import (
    EMPTY,
    NOTHING,
    Expr,
    Ref,
    Seq,
    Special,
    SpecialKind,
    alt,
    byteset,
    lit,
    register_special,
    repeat,
    seq,
)
from ._number_kernels import minimal_rows, product_rows

__all__ = [
    "FALSE",
    "TRUE",
    "And",
    "Formula",
    "MultipleOf",
    "Not",
    "Or",
    "Range",
    "decimal_digits",
    "number_expr",
]

MAX_BOUND_DIGITS = 2000
MAX_NUMBER_STATES = 50_000


# ----------------------------------------------------------------------------- formulas


@dataclass(frozen=True)
class Range:
    """``lo (<|<=) x (<|<=) hi``; ``None`` is an open end."""

    lo: Fraction | None = None
    lo_excl: bool = False
    hi: Fraction | None = None
    hi_excl: bool = False


@dataclass(frozen=True)
class MultipleOf:
    """``x / m`` is an integer (``m > 0``)."""

    m: Fraction


@dataclass(frozen=True)
class And:
    items: tuple[Formula, ...]


@dataclass(frozen=True)
class Or:
    items: tuple[Formula, ...]


@dataclass(frozen=True)
class Not:
    item: Formula


@dataclass(frozen=True)
class _Const:
    value: bool


TRUE = _Const(True)
FALSE = _Const(False)

Formula = Union[Range, MultipleOf, And, Or, Not, _Const]  # noqa: UP007 (runtime alias)


def _atoms(f: Formula, out: list, where: dict[int, int]) -> None:
    """The distinct atoms of ``f`` into ``out``; ``where`` maps each occurrence (by ``id``) to its
    index there (equal atoms may be distinct objects, and comparing them hashes fractions)."""
    if isinstance(f, Range | MultipleOf):
        if id(f) not in where:
            if f not in out:
                out.append(f)
            where[id(f)] = out.index(f)
    elif isinstance(f, And | Or):
        for it in f.items:
            _atoms(it, out, where)
    elif isinstance(f, Not):
        _atoms(f.item, out, where)


# ----------------------------------------------------------------------------- decimals


def decimal_digits(x: Fraction) -> tuple[str, str]:
    """``(integer digits, fraction digits)`` of a non-negative finite decimal.

    The integer part has no leading zeros (``"0"`` below one); the fraction part has
    no trailing zeros. Raises ValueError for values that are not finite decimals.
    """
    if x < 0:
        raise ValueError("negative")
    den = x.denominator
    d = den
    twos = fives = 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    if d != 1:
        raise ValueError(f"{x} is not a finite decimal")
    k = max(twos, fives)
    n = x.numerator * (10**k) // den
    s = str(n).rjust(k + 1, "0")
    ip, fp = s[: len(s) - k] if k else s, s[len(s) - k :] if k else ""
    ip = ip.lstrip("0") or "0"
    fp = fp.rstrip("0")
    if len(ip) + len(fp) > MAX_BOUND_DIGITS:
        raise LimitExceededError(
            f"numeric bound has {len(ip) + len(fp)} digits (more than {MAX_BOUND_DIGITS})",
            limit="max_bound_digits",
        )
    return ip, fp


# ----------------------------------------------------------------------------- comparators
#
# A comparator follows the magnitude m of the numeral (digits only) against a fixed
# non-negative decimal c and tells at the end whether m <, = or > c.
# States: ("I", k, st) after k integer digits with prefix status st (-1/0/1) versus
# c's integer digits; ("F", j) equal so far after j fraction digits; ("D", r) decided.


def _cmp_start(c: tuple[str, str] | None):
    return ("D", 1) if c is None else ("I", 0, 0)


def _cmp_int_digit(state, d: int, c: tuple[str, str] | None):
    if state[0] != "I":
        return state
    ci = c[0]
    _, k, st = state
    if k >= len(ci):
        return ("D", 1)  # more integer digits than c: larger
    if st == 0:
        cd = ord(ci[k]) - 48
        st = -1 if d < cd else (1 if d > cd else 0)
    return ("I", k + 1, st)


def _cmp_int_end(state, c: tuple[str, str] | None):
    if state[0] != "I":
        return state
    ci = c[0]
    _, k, st = state
    if k < len(ci):
        return ("D", -1)
    if st != 0:
        return ("D", st)
    return ("F", 0)


def _cmp_frac_digit(state, d: int, c: tuple[str, str] | None):
    if state[0] != "F":
        return state
    cf = c[1]
    j = state[1]
    cd = ord(cf[j]) - 48 if j < len(cf) else 0
    if d < cd:
        return ("D", -1)
    if d > cd:
        return ("D", 1)
    return ("F", min(j + 1, len(cf)))


def _cmp_cuts(state, c: tuple[str, str] | None, frac: bool, cuts: set[int]) -> None:
    """Add to ``cuts`` the digits at which the comparator's next step (an integer digit, or a fraction
    digit if ``frac``) may change: ``d`` against the constant's digit ``cd`` splits 0-9 three ways."""
    if c is None:
        return
    if not frac and state[0] == "I" and state[2] == 0 and state[1] < len(c[0]):
        cd = ord(c[0][state[1]]) - 48
    elif frac and state[0] == "F":
        cf = c[1]
        cd = ord(cf[state[1]]) - 48 if state[1] < len(cf) else 0
    else:
        return
    cuts.add(cd)
    cuts.add(cd + 1)


def _cmp_result(state, c: tuple[str, str] | None) -> int:
    if state[0] == "D":
        return state[1]
    if state[0] == "I":  # not reachable at an accepting position
        state = _cmp_int_end(state, c)
        if state[0] == "D":
            return state[1]
    j = state[1]
    return -1 if j < len(c[1]) else 0


# ----------------------------------------------------------------------------- atom machines


class _RangeMachine:
    """Tracks the sign and comparisons of the magnitude against |bounds|."""

    def __init__(self, r: Range):
        self.r = r
        self.exponent_ok = all(b is None or b == 0 for b in (r.lo, r.hi))

        def dec(x: Fraction | None):
            if x is None or x < 0:
                return None
            return decimal_digits(x)

        # For a positive numeral compare m with lo and hi; for a negative one with -hi, -lo.
        self.pos = (dec(r.lo), dec(r.hi))
        self.neg = (dec(-r.hi) if r.hi is not None else None, dec(-r.lo) if r.lo is not None else None)

    def start(self):
        return None  # sign not yet known

    def _consts(self, neg: bool):
        return self.neg if neg else self.pos

    def sign(self, neg: bool):
        a, b = self._consts(neg)
        return (neg, _cmp_start(a), _cmp_start(b))

    def int_digit(self, s, d):
        if s is None:
            s = self.sign(False)
        neg, x, y = s
        a, b = self._consts(neg)
        return (neg, _cmp_int_digit(x, d, a), _cmp_int_digit(y, d, b))

    def int_end(self, s):
        neg, x, y = s
        a, b = self._consts(neg)
        return (neg, _cmp_int_end(x, a), _cmp_int_end(y, b))

    def frac_digit(self, s, d):
        neg, x, y = s
        a, b = self._consts(neg)
        return (neg, _cmp_frac_digit(x, d, a), _cmp_frac_digit(y, d, b))

    def digit_cuts(self, s, frac: bool, cuts: set[int]) -> None:
        """Digits at which the next digit step may change (see :func:`_build_dfa`)."""
        if s is None:
            s = self.sign(False)
        neg, x, y = s
        a, b = self._consts(neg)
        _cmp_cuts(x, a, frac, cuts)
        _cmp_cuts(y, b, frac, cuts)

    def accept(self, s) -> bool:
        neg, x, y = s
        a, b = self._consts(neg)
        r = self.r
        # comparator against a negative constant (None here) means "m > c" always
        ra = _cmp_result(x, a) if a is not None else 1
        rb = _cmp_result(y, b) if b is not None else 1
        if not neg:
            ok_lo = r.lo is None or (ra > 0 if r.lo_excl else ra >= 0)
            ok_hi = r.hi is None or (rb < 0 if r.hi_excl else rb <= 0)
            if r.hi is not None and r.hi < 0:
                ok_hi = False
        else:
            # value = -m; value <= hi  <=>  m >= -hi (a);  value >= lo  <=>  m <= -lo (b)
            if r.hi is None or r.hi > 0:
                ok_hi = True
            else:
                ok_hi = ra > 0 if r.hi_excl else ra >= 0
            if r.lo is None:
                ok_lo = True
            elif r.lo > 0:
                # m <= -lo < 0 is impossible unless ... m >= 0 always, so only m == 0 fails too
                ok_lo = False
            else:
                ok_lo = rb < 0 if r.lo_excl else rb <= 0
        return ok_lo and ok_hi


class _MultipleMachine:
    """Remainder of ``x * 10**s`` modulo ``p`` (``m = p / 10**s`` after reduction)."""

    def __init__(self, mo: MultipleOf):
        m = mo.m
        num, den = m.numerator, m.denominator
        # keep only the 2/5 part of the denominator: finite decimals cannot be multiples
        # of the rest unless they are multiples of the numerator-scaled value
        q1 = 1
        d = den
        for pf in (2, 5):
            while d % pf == 0:
                d //= pf
                q1 *= pf
        # m' = num / q1 ; find s with q1 | 10**s
        s = 0
        while (10**s) % q1:
            s += 1
        self.p = num * (10**s // q1)
        self.s = s
        self.exponent_ok = False
        if self.p * (self.s + 1) > MAX_NUMBER_STATES:
            raise LimitExceededError(
                f"multipleOf {m} needs a remainder automaton with {self.p * (self.s + 1)} states",
                limit="max_number_states",
            )

    def start(self):
        return (0, 0, True)

    def sign(self, neg: bool):
        return (0, 0, True)

    def int_digit(self, st, d):
        r, f, ok = st
        return ((r * 10 + d) % self.p, f, ok)

    def int_end(self, st):
        return st

    def frac_digit(self, st, d):
        r, f, ok = st
        if f < self.s:
            return ((r * 10 + d) % self.p, f + 1, ok)
        return (r, f, ok and d == 0)

    def digit_cuts(self, st, frac: bool, cuts: set[int]) -> None:
        """Digits at which the next digit step may change (see :func:`_build_dfa`)."""
        if frac and st[1] >= self.s:
            cuts.add(1)  # a digit past the multiple's precision: zero or not
        elif self.p > 1:
            cuts.update(range(1, 10))  # the remainder depends on each digit

    def accept(self, st) -> bool:
        r, f, ok = st
        return ok and (r * pow(10, self.s - f, self.p)) % self.p == 0


# ----------------------------------------------------------------------------- numeral DFA
#
# Symbols: 0..9 digits, 10 '-', 11 '.', 12 'e'/'E', 13 '+'.
_SYM_BYTES = [(0x30 + d,) for d in range(10)] + [(0x2D,), (0x2E,), (0x65, 0x45), (0x2B,)]
_MINUS, _DOT, _EXP, _PLUS = 10, 11, 12, 13
# phases
_START, _NEG, _I0, _I1, _FDOT, _FD, _EXP0, _EXPS, _EXPD = range(9)
_FINAL_PHASES = {_I0, _I1, _FD, _EXPD}
#: the symbols other than digits each phase may read ('-' starts a number or an exponent, ...)
_OTHER_SYMS = {_START: (_MINUS,), _NEG: (), _I0: (_DOT, _EXP), _I1: (_DOT, _EXP), _FDOT: (), _FD: (_EXP,),
               _EXP0: (_MINUS, _PLUS), _EXPS: (), _EXPD: ()}


@dataclass
class _DFA:
    trans: list[dict[int, int]]
    final: list[bool]


def _minimal_table(formula: Formula, plain_integers: bool = False, decorated: bool = False
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The minimal numeral automaton of ``formula``: ``(trans, final)``, a row of targets (-1: none)
    per state over the symbols, start 0, trimmed (no state when nothing is accepted).

    Each atom's machine is explored alone (a few states: a comparator's, or a remainder's), then
    the product of those automata is taken in one kernel call (every state a tuple of the atoms'
    states) and minimized in another. Several ``multipleOf`` make the product large -- 24,607
    states for five of them and a bound, 91 once minimal -- which a Python exploration of the
    product stepped through a digit at a time in 1.5 s.
    """
    atoms: list = []
    where: dict[int, int] = {}
    _atoms(formula, atoms, where)
    machines = [_RangeMachine(a) if isinstance(a, Range) else _MultipleMachine(a) for a in atoms]
    allow_exp = all(m.exponent_ok for m in machines)
    parts = ([_explore(m, allow_exp, plain_integers, decorated) for m in machines]
             or [_explore(None, allow_exp, plain_integers, decorated)])
    if len(parts) == 1:
        trans, states = parts[0][0], np.arange(parts[0][0].shape[0], dtype=np.int32)[:, None]
    else:
        offsets = np.cumsum([0] + [p[0].shape[0] for p in parts[:-1]])
        trans, states = product_rows(np.concatenate([p[0] for p in parts]), offsets, MAX_NUMBER_STATES)
        if trans.shape[0] == 0:
            raise LimitExceededError(f"number automaton exceeds {MAX_NUMBER_STATES} states", limit="max_number_states")
    final = parts[0][1][states[:, 0]]  # (a final phase: every machine is in the same phase)
    truth = [p[2][states[:, k]] for k, p in enumerate(parts)] if machines else []
    final &= _evaluate_all(formula, {occurrence: truth[k] for occurrence, k in where.items()}, len(final))
    return minimal_rows(trans, final)


def _build_dfa(formula: Formula, plain_integers: bool = False, decorated: bool = False) -> _DFA:
    """The minimal numeral automaton of ``formula`` (:func:`_minimal_table`) as edges per state."""
    return _dfa_of(*_minimal_table(formula, plain_integers, decorated))


def _dfa_of(trans: np.ndarray, final: np.ndarray) -> _DFA:
    """A numeral table as edges per state."""
    if trans.shape[0] == 0:
        return _DFA([{}], [False])
    return _DFA([{sym: int(t) for sym, t in enumerate(row) if t >= 0} for row in trans.tolist()], final.tolist())


def _evaluate_all(f: Formula, values: dict[int, np.ndarray], n: int) -> np.ndarray:
    """``f`` at each of ``n`` product states, with each atom's truth there ``values[id(atom)]``."""
    if isinstance(f, Range | MultipleOf):
        return values[id(f)]
    if isinstance(f, And):
        return np.logical_and.reduce([_evaluate_all(it, values, n) for it in f.items])
    if isinstance(f, Or):
        return np.logical_or.reduce([_evaluate_all(it, values, n) for it in f.items])
    if isinstance(f, Not):
        return ~_evaluate_all(f.item, values, n)
    return np.full(n, f.value)


def _explore(machine, allow_exp: bool, plain_integers: bool,
             decorated: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One atom's numeral automaton (its machine, or none: the numerals alone): ``(trans, final,
    holds)``, its table over the symbols (start 0), whether each state is at the end of a numeral
    (of one with a fraction or an exponent, if ``decorated``), and whether the atom holds for the
    numeral read there. Every atom's automaton moves in the same phases on the same symbols, so
    their product's states agree on the phase."""

    def step(state, sym: int):
        phase, sub = state
        if phase in (_START, _NEG):
            if sym == _MINUS and phase == _START:
                return (_NEG, machine and machine.sign(True))
            if sym < 10:
                if machine is not None:
                    sub = machine.int_digit(machine.sign(False) if phase == _START else sub, sym)
                return (_I0 if sym == 0 else _I1, sub)
            return None
        if phase in (_I0, _I1):
            if sym < 10:
                if phase == _I0:
                    return None
                return (_I1, machine and machine.int_digit(sub, sym))
            if plain_integers:
                return None
            if sym == _DOT or (sym == _EXP and allow_exp):
                return (_FDOT if sym == _DOT else _EXP0, machine and machine.int_end(sub))
            return None
        if phase in (_FDOT, _FD):
            if sym < 10:
                return (_FD, machine and machine.frac_digit(sub, sym))
            if sym == _EXP and allow_exp and phase == _FD:
                return (_EXP0, sub)
            return None
        if phase == _EXP0:
            if sym in (_PLUS, _MINUS):
                return (_EXPS, sub)
            if sym < 10:
                return (_EXPD, sub)
            return None
        if phase in (_EXPS, _EXPD):
            if sym < 10:
                return (_EXPD, sub)
            return None
        return None

    def holds(state) -> bool:
        phase, sub = state
        if machine is None or phase not in _FINAL_PHASES:
            return False
        return machine.accept(machine.int_end(sub) if phase in (_I0, _I1) else sub)

    def digit_groups(state) -> list[range]:
        """The digits 0-9 in runs that step alike: the machine names where its step may change (a
        comparator at its constant's digit, a remainder at every digit), and a first integer digit
        0 (no more digits after it) differs from 1-9. Stepping one digit per run is enough."""
        phase, sub = state
        if phase in (_I0, _EXP0, _EXPS, _EXPD):
            return [range(10)]  # (no digit, or digits that change no machine: all alike)
        cuts = {0, 10}
        if phase in (_START, _NEG):
            cuts.add(1)
        if machine is not None:
            machine.digit_cuts(sub, phase in (_FDOT, _FD), cuts)
        edges = sorted(c for c in cuts if 0 <= c <= 10)
        return [range(lo, hi) for lo, hi in pairwise(edges)]

    start = (_START, machine and machine.start())
    ids = {start: 0}
    order = [start]
    rows: list[list[int]] = []

    def state_id(nxt) -> int:
        j = ids.get(nxt)
        if j is None:
            j = len(order)
            if j >= MAX_NUMBER_STATES:
                raise LimitExceededError(
                    f"number automaton exceeds {MAX_NUMBER_STATES} states", limit="max_number_states"
                )
            ids[nxt] = j
            order.append(nxt)
        return j

    i = 0
    while i < len(order):
        st = order[i]
        i += 1
        row = [-1] * len(_SYM_BYTES)
        for digits in digit_groups(st):
            nxt = step(st, digits[0])
            if nxt is not None:
                row[digits.start:digits.stop] = [state_id(nxt)] * len(digits)
        for sym in _OTHER_SYMS[st[0]]:
            nxt = step(st, sym)
            if nxt is not None:
                row[sym] = state_id(nxt)
        rows.append(row)
    ends = _FINAL_PHASES - {_I0, _I1} if decorated else _FINAL_PHASES
    final = np.array([s[0] in ends for s in order], dtype=bool)
    return np.array(rows, dtype=np.int32), final, np.array([holds(s) for s in order], dtype=bool)


# ----------------------------------------------------------------------------- emission


def _sym_set(syms: list[int]) -> Expr:
    bs: list[int] = []
    for s in syms:
        bs.extend(_SYM_BYTES[s])
    return byteset(*bs)


def _sccs(d: _DFA) -> list[int]:
    """Component id of every state (Tarjan; components numbered in reverse topological order)."""
    graph = {v: sorted(d.trans[v].values()) for v in range(len(d.trans))}
    comp = [-1] * len(d.trans)
    for k, members in enumerate(strongly_connected_components(graph)):
        for v in members:
            comp[v] = k
    return comp


def _alt_right_factored(outs: list[Expr]) -> Expr:
    """``alt(*outs)`` with alternatives that end in the same expression merged:
    ``a T | b T`` is ``(a | b) T``.

    Emitting an automaton as an expression copies a state reached along several paths once per
    path (``0 F | [1-9][0-9]* F | -(0 F | [1-9][0-9]* F)`` for the fraction and exponent ``F``);
    each copy is NFA states the engine determinizes and then merges again (a plain JSON number
    was 222 NFA and 46 DFA states for 9 minimal). Factoring the shared tail keeps one copy.
    """
    groups: dict[Expr, list[Expr]] = {}
    for o in outs:
        items = o.items if type(o) is Seq else (o,)  # type: ignore[attr-defined]
        groups.setdefault(items[-1], []).append(seq(*items[:-1]))
    if len(groups) == len(outs):
        return alt(*outs)
    return alt(*(seq(_alt_right_factored(heads), tail) if len(heads) > 1 else seq(heads[0], tail)
                 for tail, heads in groups.items()))


def _emit(d: _DFA, rule_prefix: str) -> tuple[Expr, dict[str, Expr]]:
    n = len(d.trans)
    if not any(d.final):
        return NOTHING, {}
    comp = _sccs(d)
    size: dict[int, int] = {}
    for c in comp:
        size[c] = size.get(c, 0) + 1
    as_rule = [size[comp[s]] > 1 for s in range(n)]
    rules: dict[str, Expr] = {}
    memo: dict[int, Expr] = {}

    def grouped_edges(s: int) -> list[tuple[list[int], int]]:
        by_t: dict[int, list[int]] = {}
        for sym, t in sorted(d.trans[s].items()):
            by_t.setdefault(t, []).append(sym)
        return sorted(by_t.items(), key=lambda kv: kv[1][0])  # type: ignore[return-value]

    def body(s: int, in_rule: bool) -> Expr:
        loop: list[int] = []
        outs: list[Expr] = []
        for t, syms in grouped_edges(s):
            if t == s and not in_rule:
                loop = syms
                continue
            outs.append(seq(_sym_set(syms), ref(t)))
        if d.final[s]:
            outs.append(EMPTY)
        rest = _alt_right_factored(outs)
        if loop:
            return seq(repeat(_sym_set(loop), 0, None), rest)
        return rest

    def ref(s: int) -> Expr:
        if as_rule[s]:
            return Ref(f"{rule_prefix}.q{s}")
        if s not in memo:
            memo[s] = body(s, False)
        return memo[s]

    # rules for states in non-trivial components, in state order (deterministic)
    for s in range(n):
        if as_rule[s]:
            rules[f"{rule_prefix}.q{s}"] = body(s, True)
    start = ref(0)
    body = ref = None  # type: ignore[assignment]  # (break the closures' cycle: freed now, not by the collector)
    return start, rules


def number_expr(formula: Formula, rule_prefix: str = "num", plain_integers: bool = False,
                decorated: bool = False) -> tuple[Expr, dict[str, Expr]]:
    """IR for the JSON numerals whose value satisfies ``formula``.

    Returns ``(expr, rules)``: ``rules`` holds right-linear helper rules named
    ``{rule_prefix}.q<N>`` (empty unless the automaton has non-trivial cycles, as
    remainder automata for ``MultipleOf`` do); add them to the grammar. ``plain_integers``
    keeps only numerals without a fraction or exponent (draft 4's integers: ``1.0`` is not one),
    ``decorated`` only those with one (draft 4's numbers that are not integers: ``1.0`` is one).
    """
    key = (formula, "plain integers") if plain_integers else (formula, "decorated") if decorated else formula
    hit = _EXPR_CACHE.get(key)
    if hit is None:
        if len(_EXPR_CACHE) >= _EXPR_CACHE_SIZE:  # (the oldest goes; another thread may take it first)
            _EXPR_CACHE.pop(next(iter(_EXPR_CACHE), None), None)
        bounds = None if decorated else _integer_bounds(formula)
        if bounds is not None:  # (the common case, spelled directly: the same language)
            e = _integer_range_expr(*bounds, plain_integers)
            _EXPR_CACHE[key] = e
            return e, {}
        d = _dfa_of(*_numeral_table((formula, plain_integers, decorated)))
        if len(d.trans) > SPECIAL_MIN_STATES and not _has_cycles(d):  # (see NUMERAL_KIND)
            e = _EXPR_CACHE[key] = Special(NUMERAL_KIND, (formula, plain_integers, decorated))
            return e, {}
        e, rules = _emit(d, rule_prefix)
        # an automaton without helper rules gives an expression that does not depend on the prefix
        _EXPR_CACHE[key] = e if not rules else d
        return e, rules
    if isinstance(hit, Expr):
        return hit, {}
    return _emit(hit, rule_prefix)


#: an acyclic numeral automaton of more states than this is a :class:`~logitgate.grammar.ir.Special`
#: node of kind :data:`NUMERAL_KIND`, its automaton built directly from the table: emitted as an
#: expression, a bound of hundreds of digits (``maximum: 1.7976931348623157e308``, the largest
#: double, or an integer ``maximum`` of 251 digits) nests each state in the one before it -- an
#: expression hundreds deep, which the engine built into 380,000 NFA states (each state read along
#: two paths, copied for each) for 500 states once minimal, and walked past Python's recursion limit
NUMERAL_KIND = "json_numeral"
SPECIAL_MIN_STATES = 128


def _has_cycles(d: _DFA) -> bool:
    """Whether ``d`` has a cycle longer than a self-loop (those need rules: no :data:`NUMERAL_KIND`)."""
    comp = _sccs(d)
    return len(set(comp)) < len(comp)


@functools.lru_cache(maxsize=64)
def _numeral_table(args: tuple) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_minimal_table` of ``(formula, plain_integers, decorated)``, the last few remembered
    (a :data:`NUMERAL_KIND` node's automaton is built from the table its expression was decided on)."""
    return _minimal_table(*args)


def _numeral_classes() -> tuple[np.ndarray, np.ndarray]:
    """Each byte's class (0: no symbol), classes numbered by their lowest byte; and each symbol's class."""
    lowest = sorted((min(bs), sym) for sym, bs in enumerate(_SYM_BYTES))
    cls_of_sym = np.zeros(len(_SYM_BYTES), dtype=np.int32)
    byte_class = np.zeros(256, dtype=np.int32)
    for k, (_, sym) in enumerate(lowest, start=1):
        cls_of_sym[sym] = k
        byte_class[list(_SYM_BYTES[sym])] = k
    return byte_class, cls_of_sym


def _build_numeral(args: tuple, dfa_of: Callable, max_states: int) -> tuple:
    """``(byte_class, trans, final, start)`` of a :data:`NUMERAL_KIND` node: the table's symbols as
    byte classes (``e`` and ``E`` one class, every other byte one with no moves)."""
    trans, final = _numeral_table(args)
    byte_class, cls_of_sym = _numeral_classes()
    table = np.full((trans.shape[0], len(_SYM_BYTES) + 1), -1, dtype=np.int32)
    table[:, cls_of_sym] = trans
    return byte_class, table, final.astype(bool), 0


def _expand_numeral(args: tuple) -> Expr:
    return _emit(_dfa_of(*_numeral_table(args)), "num")[0]  # (acyclic but for self-loops: no rules)


register_special(NUMERAL_KIND, SpecialKind(
    expand=_expand_numeral, nullable=lambda args: bool(_numeral_table(args)[1][0]), build=_build_numeral))


#: formula (with "plain integers" where asked) -> its expression (no helper rules) or its automaton
#: (helper rules named per call); schemas repeat the same bounds (``minimum: 0``, ``type: integer``)
_EXPR_CACHE: dict[object, object] = {}
_EXPR_CACHE_SIZE = 1024


# ----------------------------------------------------------------------------- integer ranges

_DIGIT = byteset((0x30, 0x39))
#: bounds with more digits go the general way (the direct spelling recurses once per digit)
_DIRECT_MAX_DIGITS = 200


def _integer_bounds(f: Formula) -> tuple[int | None, int | None] | None:
    """``(lo, hi)`` (``None``: open) when ``f`` is "an integer within ranges", else None."""
    items = list(f.items) if isinstance(f, And) else [f]
    k = 0
    while k < len(items):  # (nested conjunctions)
        if isinstance(items[k], And):
            items[k:k + 1] = items[k].items
        else:
            k += 1
    if not any(isinstance(x, MultipleOf) and x.m == 1 for x in items):
        return None
    lo: int | None = None
    hi: int | None = None
    for x in items:
        if isinstance(x, MultipleOf) and x.m == 1:
            continue
        if not isinstance(x, Range):
            return None
        if x.lo is not None:  # the least integer above (or at) the bound
            v = floor(x.lo) + 1 if x.lo_excl else ceil(x.lo)
            lo = v if lo is None else max(lo, v)
        if x.hi is not None:
            v = ceil(x.hi) - 1 if x.hi_excl else floor(x.hi)
            hi = v if hi is None else min(hi, v)
    if any(b is not None and len(str(abs(b))) > _DIRECT_MAX_DIGITS for b in (lo, hi)):
        return None
    return lo, hi


def _integer_range_expr(lo: int | None, hi: int | None, plain: bool) -> Expr:
    """The numerals of the integers in ``[lo, hi]``: canonical digits (``-0`` too, where 0 is in
    range), then -- unless ``plain`` -- an optional zero fraction (``1.0`` is an integer)."""
    if lo is not None and hi is not None and lo > hi:
        return alt()
    parts = []
    if hi is None or hi >= 0:
        parts.append(_naturals(max(lo, 0) if lo is not None else 0, hi))
    if lo is None or lo < 0:  # magnitudes of the negatives
        parts.append(seq(lit("-"), _naturals(max(1, -hi) if hi is not None else 1, -lo if lo is not None else None)))
    if (lo is None or lo <= 0) and (hi is None or hi >= 0):
        parts.append(lit("-0"))
    body = alt(*parts)
    return body if plain else seq(body, alt(seq(lit(".0"), repeat(lit("0"))), EMPTY))


def _naturals(a: int, b: int | None) -> Expr:
    """Decimal spellings (no leading zero) of the naturals ``a..b`` (``b`` None: unbounded)."""
    sa = str(a)
    if b is None:
        return alt(_same_length(sa, "9" * len(sa)), seq(byteset((0x31, 0x39)), repeat(_DIGIT, len(sa), None)))
    if a > b:
        return alt()
    sb = str(b)
    return alt(*(_same_length(sa if n == len(sa) else "1" + "0" * (n - 1), sb if n == len(sb) else "9" * n)
                 for n in range(len(sa), len(sb) + 1)))


@functools.lru_cache(maxsize=4096)
def _same_length(x: str, y: str) -> Expr:
    """Digit strings from ``x`` to ``y`` (equal lengths, ``x <= y``), by their first digit.
    Remembered: bounds share their parts (``0``-``9``, ``10``-``99``, ``00``-``99`` below a ``1``),
    and a new bound was ~55 µs of node building for ``0..150``."""
    if x == y:
        return lit(x)
    i = 0
    while x[i] == y[i]:
        i += 1
    prefix, x, y = x[:i], x[i:], y[i:]
    k = len(x) - 1
    if not k:
        return seq(lit(prefix), byteset((ord(x), ord(y))))
    lo_d, hi_d = ord(x[0]), ord(y[0])
    opts = []
    if x[1:] != "0" * k:
        opts.append(seq(lit(x[0]), _same_length(x[1:], "9" * k)))
        lo_d += 1
    upper = None
    if y[1:] != "9" * k:
        upper = seq(lit(y[0]), _same_length("0" * k, y[1:]))
        hi_d -= 1
    if lo_d <= hi_d:
        opts.append(seq(byteset((lo_d, hi_d)), repeat(_DIGIT, k, k)))
    if upper is not None:
        opts.append(upper)
    return seq(lit(prefix), alt(*opts))


def numeral_accepts(formula: Formula) -> Callable[[bytes], bool]:
    """A membership test for the same language (debugging and tests)."""
    d = _build_dfa(formula)
    table: dict[int, int] = {}
    for sym, bs in enumerate(_SYM_BYTES):
        for b in bs:
            table[b] = sym

    def accepts(data: bytes) -> bool:
        s = 0
        for b in data:
            sym = table.get(b)
            if sym is None:
                return False
            t = d.trans[s].get(sym)
            if t is None:
                return False
            s = t
        return d.final[s]

    return accepts


def lcm_fraction(a: Fraction, b: Fraction) -> Fraction:
    """Least common multiple of two positive rationals."""
    num = a.numerator * b.numerator // gcd(a.numerator, b.numerator)
    return Fraction(num, gcd(a.denominator, b.denominator))
