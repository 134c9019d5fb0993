"""``GrammarCompiler`` and ``CompiledGrammar``: grammars compiled against one tokenizer.

Compiling is cheap on purpose: it builds the grammar's RTN (rule DFAs with call edges,
:mod:`.rtn`) and nothing per token. Token masks are computed lazily, per parser state,
on first need (:mod:`.masks`), cached in a memory-bounded store shared by every grammar
the compiler produced, and keyed so that identical rules in different grammars share
their masks.

Example::

    >>> import logitgate as lg
    >>> tok = lg.TokenizerInfo.from_vocab([b"1", b"2", b"+", b"12", b"</s>"], eos_token_id=4,
    ...                                   special_token_ids=[4])
    >>> cg = lg.GrammarCompiler(tok).compile_regex(r"[12]+(\\+[12]+)*")
    >>> cg.tokenizer_info.vocab_size
    5
"""

from __future__ import annotations

import gc
import importlib.util
import json
import pickle
import re
import threading
import traceback
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

import numpy as np

from .._recursion import with_room
from ..errors import GrammarError
from ..grammar.ir import Grammar
from ._automata_kernels import merge_equal_classes
from .masks import (
    MaskStore,
    StateMask,
    WalkScratch,
    compute_state_mask,
    mask_nbytes,
    resolve_context,
    warm_kernels,
)
from .rtn import RTN, CompileLimits, compile_rtn

if TYPE_CHECKING:  # pragma: no cover
    from ..tokenizer import TokenizerInfo

__all__ = ["CompiledGrammar", "GrammarCompiler"]

_BOTTOM_KEY = -1  # context-cache key entry: no frame below
#: how many grammars a compiler keeps to share their compiles with inputs that convert to an equal
#: grammar (the most recently used). Each keeps its IR alive (~300 small objects for a MaskBench
#: schema), which every full collection of the process's cyclic garbage collector walks: with the IR
#: of a MaskBench run's 300 schemas kept (every one cached), a full collection took 75 ms, a token
#: step that met it 48 ms; with the last 16 kept, 13-27 ms
SHARED_GRAMMARS = 16
#: and only while their rules come to at most this many together (a grammar of more is not kept):
#: after 2,500 MaskBench schemas the 16 kept held 35,000 objects, most of them in the five of 829 to
#: 1,086 rules, and a full collection took 70-88 ms instead of 40
SHARED_GRAMMAR_RULES = 512


class TokenRuntime:
    """Per-tokenizer data the engine needs at run time (shared by all grammars)."""

    def __init__(self, info: TokenizerInfo):
        self.info = info
        self.trie = info.trie
        self.vocab_size = int(info.vocab_size)
        self.num_words = (self.vocab_size + 31) // 32
        lens = np.fromiter((len(b) for b in info.token_bytes), dtype=np.int64, count=len(info.token_bytes))
        self.tok_off = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=self.tok_off[1:])
        self.tok_data = np.frombuffer(b"".join(info.token_bytes), dtype=np.uint8)
        in_trie = np.zeros(self.vocab_size, dtype=bool)
        in_trie[self.trie.tok_ids] = True
        self.in_trie = in_trie
        self.base_row = np.zeros(self.num_words, dtype=np.int32)
        ids = self.trie.tok_ids.astype(np.int64)
        np.bitwise_or.at(self.base_row.view(np.uint32), ids >> 5, (np.uint32(1) << (ids & 31).astype(np.uint32)))
        self._local = threading.local()
        self._slices = None
        self._slices_lock = threading.Lock()

    @property
    def slices(self):
        """Vocabulary slices (:mod:`.slices`), built on first use."""
        if self._slices is None:
            with self._slices_lock:
                if self._slices is None:
                    from .slices import build_slices

                    self._slices = build_slices(self.info.token_bytes, self.trie.tok_ids, self.num_words,
                                                unsliced=self.trie)
        return self._slices

    def scratch(self) -> WalkScratch:
        s = getattr(self._local, "scratch", None)
        if s is None:
            s = WalkScratch(int(self.trie.max_depth), self.num_words)
            self._local.scratch = s
        return s

    def token_data(self, token_id: int) -> np.ndarray:
        return self.tok_data[self.tok_off[token_id] : self.tok_off[token_id + 1]]


#: the pieces warm-up walks its texts in (words, digits, runs of punctuation, whitespace: roughly a
#: tokenizer's; a piece that is not one token is accepted as a string)
_WARM_PIECES = re.compile(r" ?[A-Za-z]+| ?[0-9]| ?[^A-Za-z0-9\s]+|\s+")
#: rounds of small compiles and mask fills :meth:`GrammarCompiler.warm_up` runs (see ``_warm_paths``)
WARM_UP_ROUNDS = 10
#: the limits of warm-up's own compiles (fixed, small grammars: a compiler's limits, which may be
#: set low against its users' input, are not theirs)
_WARM_UP_LIMITS = CompileLimits()

_GC_LOCK = threading.Lock()
_gc_pauses = 0  # compiles under way with the collector paused
_gc_resume = False  # whether the first of them found the collector enabled


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a grammar compiles (nested and concurrent
    compiles share one pause; the collector is enabled again only if it was enabled before).

    A compile allocates tens of thousands of small containers (IR nodes, tuples, dicts) that stay
    alive until it returns; a collection during it would only walk them, and every older object
    they point to, again and again -- through memory gone cold when other work ran in between.
    """
    global _gc_pauses, _gc_resume
    with _GC_LOCK:
        if _gc_pauses == 0:
            _gc_resume = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    except GrammarError as e:
        # A refused compile's traceback keeps its frames, and through them all it built (a
        # conversion refused at its rule limit: millions of objects); the collector, enabled again
        # below, would walk them all at the next allocation (0.15-0.2 s; 0.6-0.76 s at 200,000
        # rules) before the error reaches the caller. The frames' locals go now, the traceback's
        # lines stay (those of the exceptions it was raised from too). Only for a refusal: any
        # other error keeps its frames for a debugger.
        seen: set[int] = set()
        cause: BaseException | None = e
        while cause is not None and id(cause) not in seen:
            seen.add(id(cause))
            traceback.clear_frames(cause.__traceback__)
            cause = cause.__cause__ or cause.__context__
        raise
    finally:
        with _GC_LOCK:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_resume:
                gc.enable()


def _schema_key(schema: dict | bool | list) -> bytes | None:
    """The compile-cache key of a JSON Schema document: its pickle, which keeps key order
    (properties come in declared order) and tells ``1``, ``1.0`` and ``True`` apart, as JSON text
    does; a third of ``json.dumps``'s time (27 µs for a median MaskBench schema, warm).
    Equal pickles are equal documents (a document whose objects are shared differently pickles
    otherwise: a cache miss, never a wrong hit). None when the document does not pickle."""
    try:
        return pickle.dumps(schema, protocol=5)
    except Exception:  # (not plain JSON data; the converter says what is wrong with it)
        return None


_RUNTIMES: weakref.WeakValueDictionary[str, TokenRuntime] = weakref.WeakValueDictionary()
_RUNTIMES_LOCK = threading.Lock()


def _shared_runtime(info: TokenizerInfo) -> TokenRuntime:
    """One :class:`TokenRuntime` per vocabulary, shared by every compiler that uses it."""
    with _RUNTIMES_LOCK:
        rt = _RUNTIMES.get(info.fingerprint)
        if rt is None:
            rt = TokenRuntime(info)
            _RUNTIMES[info.fingerprint] = rt
        return rt


class CompiledGrammar:
    """A grammar compiled for one tokenizer; create matchers from it.

    Thread-safe: many matchers (in many threads) may share one compiled grammar.
    """

    def __init__(self, rtn: RTN, runtime: TokenRuntime, store: MaskStore, context_cache_entries: int = 100_000):
        # The grammar's IR is not kept: a compiled grammar needs only its RTN arrays, and IR trees
        # (thousands of small objects each) held by a cache of compiled grammars slow every full
        # garbage collection of the process.
        self.rtn = rtn
        self._runtime = runtime
        self._store = store
        # (a dict of the states visited, not a list over all states: the cyclic collector walks
        # every slot of a list at each collection, for as long as the grammar is cached)
        self._state_masks: dict[int, StateMask] = {}
        self._own_mask_bytes = 0  # (masks of the grammar's own rules: not in the shared store)
        self._reps: dict[int, int] = {}  # state -> the state whose mask it shares (layered rules)
        self._frames: dict[int, int] = {}  # frame state -> its key in context resolutions
        self._ctx: dict[int, dict] = {}  # context resolutions (see :meth:`context_tokens`)
        self._ctx_size = 0  # (their entries)
        self._ctx_limit = context_cache_entries
        #: state -> its one-stack top array (``[state]``), shared by the matchers (never written)
        self._single_tops: dict[int, np.ndarray] = {}
        #: one-stack steps by ``top * vocab_size + token``: the states of the frames below the top the
        #: step read, whether it found the bottom past them, and its outcome (the new top array, frames
        #: popped, states of the frames pushed) or a rejection (see ``GrammarMatcher._advance_one``)
        self._step_memo: dict[int, object] = {}
        self._lock = threading.Lock()

    @property
    def tokenizer_info(self) -> TokenizerInfo:
        return self._runtime.info

    @property
    def memory_size_bytes(self) -> int:
        """Bytes held by this grammar's automaton and its private caches: the masks of its own rules'
        states and its context resolutions (masks in the shared store excluded)."""
        r = self.rtn
        arrays = list(r.step_pack)  # (the table, the state flags, byte classes and call chains)
        for plan in tuple(r.__dict__.get("_slice_plans", {}).values()):  # survival depths per state
            # (a tuple made in one call: a first mask in another thread may add a plan meanwhile)
            arrays += [plan.lower, plan.memo, plan.tables]
        return int(sum(a.nbytes for a in arrays) + 64 * self._ctx_size + 300 * len(self._step_memo)
                   + self._own_mask_bytes)

    def __repr__(self) -> str:
        st = self.rtn.stats
        return f"CompiledGrammar(rules={st['rules']}, states={st['states']}, classes={st['classes']})"

    # ------------------------------------------------------------------ masks
    def state_mask(self, state: int) -> StateMask:
        """Context-independent mask of ``state`` (computed once, then cached; states that accept
        the same tokens share it, see :meth:`RTN.mask_representative`)."""
        m = self._state_masks.get(state)
        if m is not None:
            return m
        if self.rtn.layers:
            rep = self._representative(state)
            if rep != state:
                m = self._state_masks[state] = self.state_mask(rep)
                return m
        own = self.rtn.state_key(state)
        key = None if own is None else (self._runtime.info.fingerprint, *own)
        m = None if key is None else self._store.get(key)
        if m is None:
            rt = self._runtime
            m = compute_state_mask(state, self.rtn, rt.slices, rt.base_row, rt.scratch())
            if key is not None:
                self._store.put(key, m)
            else:  # (a state of the grammar's own rules keeps its mask here alone)
                self._own_mask_bytes += mask_nbytes(m)
        self._state_masks[state] = m
        return m

    def _representative(self, state: int) -> int:
        rep = self._reps.get(state)
        if rep is None:
            rep = self._reps[state] = self.rtn.mask_representative(state, self._runtime.trie.max_depth)
        return rep

    def _frame_key(self, state) -> int:
        """What context resolutions key a frame in ``state`` by (:meth:`RTN.frame_representative`)."""
        key = self._frames.get(state)
        if key is None:
            key = self._frames[state] = self.rtn.frame_representative(int(state), self._runtime.trie.max_depth)
        return key

    def context_tokens(self, top: int, parent: int, pool) -> np.ndarray:
        """Token ids a context-dependent token resolution adds for stack ``(top, parent)``."""
        # Cached by the top and the states of the frames the resolution popped into, ending in
        # ``_BOTTOM_KEY`` when those are the whole stack (popping on past them accepts there,
        # which a deeper stack with the same states would not): a tree of dicts, one level per
        # frame, whose leaves are the results (the frames a resolution needs depend only on their
        # states, so a prefix is either always a leaf or always a branch). A top that accepts the
        # same tokens as another resolves as that one does, and so does a frame (its key: the state
        # of the frames that take the same strings within a token's length, see ``_frame_key``).
        if self.rtn.layers:
            top = self._representative(top)
        ps, pp, _ = pool.views
        node = self._ctx.get(top)
        p = parent
        while node is not None:
            hit = node.get(ps[p] if p >= 0 else _BOTTOM_KEY)
            if hit is None and p >= 0:  # (a frame keyed by another state alike: looked up on a miss only)
                key = self._frame_key(ps[p])
                if key != ps[p]:
                    hit = node.get(key)
            if type(hit) is not dict:
                if hit is not None:
                    return hit
                break
            node = hit
            p = pp[p] if p >= 0 else p
        rt = self._runtime
        ids, min_depth = resolve_context(self.state_mask(top), parent, self.rtn, rt.slices, pool, rt.scratch())
        k = pool.depth.item(parent) - min_depth + 1
        path: list[int] = []
        p = parent
        for _ in range(k):
            path.append(self._frame_key(ps[p]))
            p = pp[p]
        if p < 0:
            path.append(_BOTTOM_KEY)
        if self._ctx_size + len(path) > self._ctx_limit:
            self._ctx, self._ctx_size = {}, 0
        node = self._ctx.get(top)
        if node is None:
            node = self._ctx[top] = {}
        for s in path[:-1]:
            nxt = node.get(s)
            if nxt is None:
                nxt = node[s] = {}
                self._ctx_size += 1
            node = nxt
        node[path[-1]] = ids
        self._ctx_size += 1
        return ids


class GrammarCompiler:
    """Compiles grammars for one tokenizer and caches the results (thread-safe).

    Args:
        tokenizer_info: the vocabulary (:class:`logitgate.TokenizerInfo`).
        cache_limit_bytes: memory bound for what the compiler keeps, together: compiled grammars
            (by their input; each weighs its automaton and what use has added to it, measured when
            it is cached and whenever it is asked for again: see
            :attr:`CompiledGrammar.memory_size_bytes`) and the per-state token masks its grammars
            share. The least recently used go first, so a server compiling a new schema per
            request holds a bounded heap. A grammar still in use by matchers stays alive for them
            after the cache lets it go.
        max_threads: default thread count for batch mask filling.
        limits: automaton size limits (:class:`logitgate.engine.rtn.CompileLimits`).
        cache_enabled: keep compiled grammars keyed by their input.
        pause_gc: pause Python's cyclic garbage collector while a grammar compiles (it is enabled
            again afterwards if it was enabled before; see :func:`_collector_paused`).
    """

    def __init__(
        self,
        tokenizer_info: TokenizerInfo,
        *,
        cache_limit_bytes: int = 1 << 30,
        max_threads: int = 8,
        limits: CompileLimits | None = None,
        cache_enabled: bool = True,
        pause_gc: bool = True,
    ):
        self.tokenizer_info = tokenizer_info
        self.max_threads = int(max_threads)
        self.limits = limits or CompileLimits()
        self.cache_enabled = cache_enabled
        self.pause_gc = pause_gc
        self._runtime = _shared_runtime(tokenizer_info)
        self.cache_limit_bytes = int(cache_limit_bytes)
        #: compiled grammars by input, least recently used first, each with its weight when last
        #: measured (their sum: ``_grammar_bytes``)
        self._by_input: OrderedDict[tuple, tuple[CompiledGrammar, int]] = OrderedDict()
        self._grammar_bytes = 0
        #: the last ``SHARED_GRAMMARS`` grammars compiled or asked for, with their compiled grammars while
        #: those are alive (cached or held): inputs that convert to the same grammar (schemas that
        #: differ in titles and descriptions) share one
        self._by_grammar: OrderedDict[Grammar, weakref.ref[CompiledGrammar]] = OrderedDict()
        self._shared_rules = 0  # (the rules of the grammars in ``_by_grammar``)
        self._lock = threading.Lock()
        # (the store reads the grammars' bytes through a weak reference: a callback holding the
        # compiler itself would make a cycle, and a dropped compiler's caches would wait for the
        # cyclic collector)
        me = weakref.ref(self)
        self._store = MaskStore(cache_limit_bytes, others=lambda: getattr(me(), "_grammar_bytes", 0))

    def warm_up(self) -> GrammarCompiler:
        """Do the per-process and per-tokenizer work now rather than in a first request.

        Builds the vocabulary slices, runs every numba kernel once (loading them from numba's
        cache) on a small recursive grammar (the step kernels only several stacks or a full frame
        pool need, on nothing: :meth:`GrammarMatcher._load_step_kernels`), compiles a tiny grammar
        through each front-end (JSON Schema with objects, arrays, oneOf and a counted string,
        regex, EBNF, choices, and where ``jsonschema`` is installed an enum it must check: their
        modules and dependencies get imported, which matters where Python writes no bytecode
        cache), builds the JSON spellings of printable ASCII characters (object keys are matched
        in every spelling) and of the character classes patterns use most, and the automaton of
        every supported string format (cached process-wide); then runs ten rounds of small
        compiles and mask fills, so the interpreter has specialized the bytecode of the functions a
        compile and a first mask run (see ``_warm_paths``), and fills the masks of the
        any-JSON-value grammar (builtin JSON, and the value of an open object's extra members) into
        the shared mask cache (see ``_warm_any_json``). A first real compile and its first masks
        then pay only for their own work.
        """
        self._warm_front_ends()
        from ..grammar.ir import Ref, alt, and_, byteset, lit, not_, repeat, seq
        from .matcher import GrammarMatcher

        rt = self._runtime
        _ = rt.slices
        warm_kernels(rt.num_words, rt.trie.tok_ids)
        # (an intersection past automata.MINIMIZE_MAX_STATES merges its alike classes by itself, with
        # a kernel no small grammar calls: loaded by the first such schema, ~25 ms, were it not now)
        merge_equal_classes(np.full((1, 1), -1, dtype=np.int32))
        # digits but not "0" (an intersection loads the product kernel), or a nested list
        item = alt(and_(repeat(byteset((0x30, 0x39)), 1, None), not_(lit("0"))), Ref("root"))
        tiny = Grammar({"root": seq(lit("["), repeat(seq(item, repeat(seq(lit(","), item))), 0, 1), lit("]"))})
        cg = self._compile(tiny, _WARM_UP_LIMITS)
        cg.rtn._ends_within(cg.rtn.root_start, 1)  # (the kernel of frame keys: see RTN.frame_representative)
        m = GrammarMatcher(cg, max_rollback_tokens=4)
        for text in ("[", "[", "1", "2", ","):
            m.get_next_token_ids()
            tid = self.tokenizer_info.token_id(text)
            if tid is None or not m.accept_token(tid):
                break
        m.get_next_token_ids()
        m.find_jump_forward_string()
        m.validate_tokens([])
        m._load_step_kernels()
        if m.fork() is not None and m._history:
            m.rollback(1)
        self._warm_paths()
        self._warm_any_json()
        self._warm_formats()
        return self

    def _warm_paths(self, rounds: int = WARM_UP_ROUNDS) -> int:
        """Compile a few small grammars (a JSON Schema object, an EBNF expression grammar, a regex),
        each round with new names, and walk a matcher through a text of each, filling every mask.

        Python specializes a function's bytecode only after it has run a few times (eight calls, in
        CPython 3.11), so a compile or a first mask made by functions run once or twice at start-up
        is slower than the same work later: a first real compile of a small schema 1.7 ms instead
        of 1.3 (and of the fixed suite's nested schema, with a pattern and bounded strings and
        arrays, 2.2 ms before the schema here had those keywords, 2.05 after). It also leaves the
        masks of the common JSON lexemes (strings, numbers) in the shared mask cache, as the first
        requests of a server would. Nothing is added to the compile cache.
        Returns how many of the texts were walked to the end of their grammar.
        """
        bitmask = np.zeros((1, self._runtime.num_words), dtype=np.int32)
        done = 0
        for i in range(rounds):
            value = {f"name{i}": "Ab c", f"count{i}": 12, f"score{i}": -1.5e3, f"ok{i}": True,
                     f"tags{i}": ["x"], f"kind{i}": i, f"sub{i}": {"x": 1}, f"day{i}": "2024-01-02",
                     f"maybe{i}": None, f"tree{i}": {"v": 1, "kids": [{"v": 2, "kids": []}]},
                     f"code{i}": "AB-1", f"short{i}": "xy", f"pct{i}": 50, f"few{i}": [1, 2],
                     f"map{i}": {"k_" + "1" * (i + 1): 1}}
            types = {f"name{i}": {"type": "string"}, f"count{i}": {"type": "integer"},
                     f"score{i}": {"type": "number"}, f"ok{i}": {"type": "boolean"},
                     f"tags{i}": {"type": "array", "items": {"type": "string"}}, f"kind{i}": {"enum": ["a", i]},
                     f"sub{i}": {"type": "object", "properties": {"x": {"type": "integer"}}},
                     f"day{i}": {"type": "string", "format": "date"},
                     f"maybe{i}": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                     f"tree{i}": {"$ref": "#/$defs/node"},
                     # (the constraints schemas use most: a pattern, bounded lengths, ranges and counts)
                     f"code{i}": {"type": "string", "pattern": f"^[A-Z]{{2}}-[0-9]{{1,{i + 2}}}$"},
                     f"short{i}": {"type": "string", "minLength": 1, "maxLength": 8 + i},
                     f"pct{i}": {"type": "integer", "minimum": 0, "maximum": 100 + i},
                     f"few{i}": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3 + i},
                     f"map{i}": {"type": "object", "patternProperties": {f"^k_[0-9]{{{i + 1}}}$": {"type": "integer"}},
                                 "additionalProperties": False}}
            node = {"type": "object", "properties": {"v": {"type": "integer"},
                                                     "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                    "required": ["v"], "additionalProperties": False}
            schema = {"type": "object", "properties": types, "required": [f"name{i}"], "$defs": {"node": node}}
            work = (
                (Grammar.from_json_schema(schema), json.dumps(value)),
                (Grammar.from_ebnf(f'root ::= term (("+" | "-") term)*\nterm ::= "n{i}" | "(" root ")"'),
                 f"(n{i}+n{i})-n{i}"),
                (Grammar.from_regex(rf"[a-z]+{i}@[a-z]+\.(com|org)"), f"abc{i}@x.com"),
            )
            for grammar, text in work:
                done += self._walk_text(self._compile(grammar, _WARM_UP_LIMITS), text, bitmask)
        return done

    def _walk_text(self, compiled: CompiledGrammar, text: str, bitmask: np.ndarray) -> bool:
        """Walk a new matcher of ``compiled`` through ``text`` in tokenizer-like pieces, filling the
        mask before each; whether it got to the end and the grammar can end there."""
        from .matcher import GrammarMatcher

        info = self.tokenizer_info
        m = GrammarMatcher(compiled)
        for piece in _WARM_PIECES.findall(text):
            m.fill_next_token_bitmask(bitmask)
            tid = info.token_id(piece)
            if not (m.accept_token(tid) if tid is not None else m.accept_string(piece)):
                return False
        m.fill_next_token_bitmask(bitmask)
        return m.can_terminate()

    def _warm_any_json(self) -> bool:
        """Walk a matcher of the any-JSON-value grammar (:meth:`compile_builtin_json`'s, which is
        also the value of every extra member of an open object) through a value of every kind, in
        compact and indented forms, filling every mask: its states' masks are left in the shared
        mask cache, as a server's first ``json_object`` requests would leave them (~70 states, a few
        milliseconds). Nothing is added to the compile cache. Returns whether both texts were
        walked to the end."""
        from ..grammar.builtins import builtin_json_grammar

        value = {"id": -12, "ratio": 0.5, "big": 6.02e23, "small": -1.5e-7, "flags": [True, False, None],
                 "empty": {}, "none": [], "text": "Tab\there \"quoted\" \\ / \u00e9t\u00e9 \u2713",
                 "rows": [{"k": "v", "n": [0, 1, 2]}, {"deep": {"deeper": ["x"]}}]}
        bitmask = np.zeros((1, self._runtime.num_words), dtype=np.int32)
        compiled = self._compile(builtin_json_grammar(), _WARM_UP_LIMITS)
        texts = (json.dumps(value, ensure_ascii=False), json.dumps(value, indent=2))
        return all([self._walk_text(compiled, text, bitmask) for text in texts])

    def _warm_formats(self) -> bool:
        """Walk a matcher through a typical value of every supported string format
        (``FORMAT_EXAMPLES``) as the value of ``{"type": "string", "format": ...}``, filling every
        mask: a format's value is a rule of its own, shared by every schema that uses the format
        that way, so its states' masks are left in the shared mask cache. They are the costliest
        first masks of common schemas (a state inside an email's local part accepts ~43,000 Qwen2.5
        tokens, 250-350 µs to walk; the fixed workload "flat schema" spent ~45 % of its cold trace
        there). ~17 ms. Returns whether every value was walked to the end."""
        from ..grammar.json_schema.formats import FORMAT_EXAMPLES

        names = {f: f"f{i}" for i, f in enumerate(FORMAT_EXAMPLES)}
        schema = {"type": "object", "properties": {names[f]: {"type": "string", "format": f} for f in names}}
        compiled = self._compile(Grammar.from_json_schema(schema), _WARM_UP_LIMITS)
        bitmask = np.zeros((1, self._runtime.num_words), dtype=np.int32)
        return all([self._walk_text(compiled, json.dumps({names[f]: x}), bitmask)
                    for f, xs in FORMAT_EXAMPLES.items() for x in xs])

    def _warm_front_ends(self) -> None:
        from ..grammar.json_schema.formats import FORMATS
        from ..grammar.json_schema.strings import encode_chars

        for cp in range(0x20, 0x7F):  # every spelling of each printable ASCII character (object keys)
            encode_chars([(cp, cp)])
        digit, upper, lower = (0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)
        for ranges in ([digit], [upper], [lower], [upper, lower], [digit, upper, lower], [digit, lower],
                       [digit, upper, (0x5F, 0x5F), lower], [digit, (0x41, 0x46), (0x61, 0x66)]):
            encode_chars(ranges)  # the classes patterns use most (\d, [A-Z], [a-z], \w, hex digits, ...)
        # every supported format's automaton, once per process (~17 ms in all; schemas share them)
        formats = {f"f{i}": {"type": "string", "format": f} for i, f in enumerate(FORMATS)}
        schema = {"type": "object", "properties": {**formats,
                                                   "b": {"type": "integer", "minimum": 0},
                                                   "c": {"enum": ["x", 1]},
                                                   # (other keys of an object with a non-ASCII name)
                                                   "d": {"type": "array", "items": {"properties": {"\u00e9": True}}},
                                                   "e": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
                                                   "f": {"type": "string", "pattern": "^[a-z0-9]+$"},
                                                   "g": {"type": "string", "maxLength": 4},  # (counted)
                                                   # (counted and a pattern: laid out in layers)
                                                   "i": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 6},
                                                   # (a number automaton: the product of its atoms')
                                                   "h": {"type": "number", "multipleOf": 0.5, "maximum": 9}},
                  "required": ["f0"]}
        # (eight alternatives or more: a set of literals is a prefix tree, built by kernels of its own)
        tlds = "|".join(("com", "org", "net", "edu", "gov", "int", "mil", "biz"))
        makes = [lambda: Grammar.from_json_schema(schema), lambda: Grammar.from_regex(rf"[a-z]+@x\.({tlds})"),
                 lambda: Grammar.from_ebnf('root ::= "a" [0-9]+ | "(" root ")"'),
                 lambda: Grammar.from_choices(tlds.split("|"))]
        if importlib.util.find_spec("jsonschema") is not None:
            # enum values checked against other keywords: the validator library's import (~40 ms)
            makes.append(lambda: Grammar.from_json_schema({"enum": ["a", "bb"], "minLength": 2}))
        for make in makes:
            compile_rtn(make(), _WARM_UP_LIMITS)  # not cached: nothing a user asked for

    # ------------------------------------------------------------------ front doors
    def compile_grammar(self, grammar: Grammar | str, root: str = "root") -> CompiledGrammar:
        """Compile a :class:`Grammar` or EBNF/GBNF text."""
        if isinstance(grammar, str):
            return self._cached(("ebnf", grammar, root), lambda: Grammar.from_ebnf(grammar, root=root))
        if not isinstance(grammar, Grammar):
            raise GrammarError(f"compile_grammar needs a Grammar or EBNF text, got {type(grammar).__name__}")
        return self._cached(("ir", grammar), lambda: grammar)

    def compile_json_schema(self, schema: Any, **options: Any) -> CompiledGrammar:
        """Compile a JSON Schema (dict, bool, JSON text, pydantic model or TypeAdapter); see
        :func:`logitgate.grammar.json_schema.json_schema_grammar` for ``options``."""
        key_schema = schema
        if isinstance(schema, dict | bool | list):
            key_schema = _schema_key(schema)
        elif isinstance(schema, type):
            key_schema = f"{schema.__module__}.{schema.__qualname__}@{id(schema)}"
        key = None if key_schema is None else (
            "json_schema", key_schema, tuple(sorted((k, repr(v)) for k, v in options.items())))
        return self._cached(key, lambda: Grammar.from_json_schema(schema, **options))

    def compile_regex(self, pattern: str, **options: Any) -> CompiledGrammar:
        """Compile a regex (the whole output must match; see :mod:`logitgate.grammar.regex`)."""
        key = ("regex", pattern, tuple(sorted((k, repr(v)) for k, v in options.items())))
        return self._cached(key, lambda: Grammar.from_regex(pattern, **options))

    def compile_builtin_json(self, **options: Any) -> CompiledGrammar:
        """Compile the grammar of any JSON value."""
        key = ("builtin_json", tuple(sorted((k, repr(v)) for k, v in options.items())))
        return self._cached(key, lambda: Grammar.builtin_json(**options))

    def compile_choices(self, choices: Iterable[str | bytes]) -> CompiledGrammar:
        """Compile "exactly one of these strings"."""
        items = tuple(choices)
        return self._cached(("choices", items), lambda: Grammar.from_choices(items))

    def clear_cache(self) -> None:
        """Forget compiled grammars and cached masks."""
        with self._lock:
            self._by_input.clear()
            self._by_grammar.clear()
            self._shared_rules = 0
            self._grammar_bytes = 0
        self._store.clear()

    @property
    def mask_store(self) -> MaskStore:
        return self._store

    # ------------------------------------------------------------------ internals
    def _cached(self, key: tuple | None, make) -> CompiledGrammar:
        """The grammar compiled for ``key`` (None: no key could be made, compiled and not kept)."""
        keep = self.cache_enabled and key is not None
        if keep:
            with self._lock:
                hit = self._by_input.get(key)
                if hit is not None:  # (weighed again: its use may have added masks and tables)
                    self._keep(key, hit[0], hit[1])
                    return hit[0]
        with _collector_paused() if self.pause_gc else nullcontext():
            cg = with_room(lambda: self._compile_once(make()), "the grammar")
        if keep:
            with self._lock:
                hit = self._by_input.get(key)
                if hit is not None:  # (another thread compiled it meanwhile: theirs is kept)
                    return hit[0]
                self._keep(key, cg, 0)
        return cg

    def _keep(self, key: tuple, cg: CompiledGrammar, old_weight: int) -> None:
        """Cache ``cg`` (weighed now) as the most recently used grammar, then let the least
        recently used others go while the grammars and the mask store together pass
        ``cache_limit_bytes`` (the newest stays, alone if it must). Called holding ``_lock``."""
        w = cg.memory_size_bytes
        self._by_input[key] = (cg, w)
        self._by_input.move_to_end(key)
        self._grammar_bytes += w - old_weight
        limit = self.cache_limit_bytes - self._store.nbytes
        while self._grammar_bytes > limit and len(self._by_input) > 1:
            _, (_, ew) = self._by_input.popitem(last=False)
            self._grammar_bytes -= ew

    def _compile_once(self, grammar: Grammar) -> CompiledGrammar:
        """``grammar`` compiled, or the compiled grammar alive that was compiled from an equal one."""
        if not self.cache_enabled:
            return self._compile(grammar)
        with self._lock:
            cg = self._shared(grammar)
        if cg is None:
            cg = self._compile(grammar)
            with self._lock:
                shared = self._shared(grammar)
                if shared is not None:  # (another thread's, compiled meanwhile, is kept)
                    return shared
                if len(grammar.rules) <= SHARED_GRAMMAR_RULES:
                    self._by_grammar[grammar] = weakref.ref(cg)
                    self._shared_rules += len(grammar.rules)
                    while (len(self._by_grammar) > SHARED_GRAMMARS
                           or self._shared_rules > SHARED_GRAMMAR_RULES):
                        self._shared_rules -= len(self._by_grammar.popitem(last=False)[0].rules)
        return cg

    def _shared(self, grammar: Grammar) -> CompiledGrammar | None:
        """The compiled grammar alive that was compiled from one equal to ``grammar``, made the most
        recently used (None: none). Called holding ``_lock``."""
        ref = self._by_grammar.get(grammar)
        cg = None if ref is None else ref()
        if cg is not None:
            self._by_grammar.move_to_end(grammar)
        elif ref is not None:
            del self._by_grammar[grammar]
            self._shared_rules -= len(grammar.rules)
        return cg

    def _compile(self, grammar: Grammar, limits: CompileLimits | None = None) -> CompiledGrammar:
        return CompiledGrammar(compile_rtn(grammar, limits or self.limits), self._runtime, self._store)
