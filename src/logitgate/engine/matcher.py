"""``GrammarMatcher``: the per-sequence state of constrained decoding.

A matcher holds a parser configuration (a set of stacks whose frames live in a pool
shared with its forks), fills next-token bitmasks and accepts tokens. Rejected tokens
leave the state unchanged; ``rollback`` undoes accepted tokens (speculative decoding);
``fork`` copies the state cheaply (beam search).

Example::

    >>> import logitgate as lg
    >>> tok = lg.TokenizerInfo.from_vocab([b"a", b"b", b"ab", b"</s>"], eos_token_id=3,
    ...                                   special_token_ids=[3])
    >>> m = lg.GrammarMatcher(lg.GrammarCompiler(tok).compile_regex("(ab)+"))
    >>> bm = lg.allocate_token_bitmask(1, tok.vocab_size)
    >>> _ = m.fill_next_token_bitmask(bm)
    >>> lg.bitmask_to_ids(bm[0], tok.vocab_size).tolist()
    [0, 2]
    >>> m.accept_token(2), m.accept_token(3), m.is_terminated()
    (True, True, True)
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import MatcherError
from . import _walk
from .compiler import CompiledGrammar
from .masks import _raise_walk_error, _write_row, _write_set

__all__ = ["GrammarMatcher"]


class FramePool:
    """Append-only frame storage shared by a matcher and its forks."""

    def __init__(self, capacity: int = 1024):
        self.size = 0
        self.lock = threading.Lock()
        #: context tokens by stack, ``top << 32 | parent`` -> ids (:meth:`GrammarMatcher._context`): a
        #: frame index names its whole stack, so tokens read in one frame (a string's, a number's) find
        #: their stack's tokens here (~0.1 µs), not through the grammar's tree of popped frames (~0.3-0.8)
        self.contexts: dict[int, np.ndarray] = {}
        self._use(np.empty((3, capacity), dtype=np.int32))

    def _use(self, block: np.ndarray) -> None:
        #: frame states, parents and depths as the rows of one array (one argument of a kernel)
        self.block = block
        self.state, self.parent, self.depth = block
        #: the same rows as memoryviews (read and written from Python: ~35 ns an item, ~90 through numpy)
        self.views = tuple(memoryview(row) for row in block)

    def reserve(self, extra: int) -> None:
        need = self.size + extra
        cap = self.block.shape[1]
        if need <= cap:
            return
        while cap < need:
            cap *= 2
        block = np.empty((3, cap), dtype=np.int32)
        block[:, : self.size] = self.block[:, : self.size]
        self._use(block)


class _State:
    __slots__ = ("par", "terminated", "top")

    def __init__(self, top: np.ndarray, par: np.ndarray, terminated: bool):
        self.top = top
        self.par = par
        self.terminated = terminated


class GrammarMatcher:
    """Matches a token sequence against a compiled grammar, one token at a time.

    Args:
        compiled_grammar: from :class:`GrammarCompiler`.
        max_rollback_tokens: how many accepted tokens :meth:`rollback` can undo
            (-1: unlimited).
        stop_token_ids: tokens that end generation; default: the tokenizer's stop tokens.
            They are allowed exactly when the grammar can end; accepting one terminates.
        terminate_without_stop_token: if True, the matcher also terminates as soon as the
            grammar has ended and nothing else can follow.
    """

    def __init__(
        self,
        compiled_grammar: CompiledGrammar,
        *,
        max_rollback_tokens: int = 0,
        stop_token_ids: Iterable[int] | None = None,
        terminate_without_stop_token: bool = False,
        override_stop_tokens: Iterable[int] | None = None,
    ):
        if not isinstance(compiled_grammar, CompiledGrammar):
            raise TypeError("GrammarMatcher needs a CompiledGrammar (see GrammarCompiler)")
        self._cg = compiled_grammar
        self._rt = compiled_grammar._runtime
        self._rtn = compiled_grammar.rtn
        self._views = _matcher_views(self._rtn)
        self._single_tops = compiled_grammar._single_tops
        if stop_token_ids is None:
            stop_token_ids = override_stop_tokens
        stops = self._rt.info.stop_token_ids if stop_token_ids is None else tuple(stop_token_ids)
        vs = self._rt.vocab_size
        for t in stops:
            if not 0 <= int(t) < vs:
                raise ValueError(f"stop token id {t} is outside the vocabulary (size {vs})")
        self._stop_ids = np.array(sorted({int(t) for t in stops}), dtype=np.int32)
        self._stop_set = frozenset(int(t) for t in stops)
        self.max_rollback_tokens = int(max_rollback_tokens)
        self.terminate_without_stop_token = bool(terminate_without_stop_token)
        self._pool = FramePool()
        self._history: deque[_State] = deque()
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Back to the start of the grammar (history cleared)."""
        self._top = self._single_top(self._rtn.root_start)
        self._par = np.array([_walk.BOTTOM], dtype=np.int32)
        self._can_end: bool | None = None  # can_terminate() of this configuration, once known
        self._terminated = False
        self._history.clear()

    def fork(self) -> GrammarMatcher:
        """An independent copy of this matcher (shares immutable frames)."""
        m = object.__new__(GrammarMatcher)
        m.__dict__.update(self.__dict__)
        m._history = deque(self._history)
        return m

    @property
    def compiled_grammar(self) -> CompiledGrammar:
        return self._cg

    @property
    def stop_token_ids(self) -> tuple[int, ...]:
        return tuple(int(t) for t in self._stop_ids)

    def is_terminated(self) -> bool:
        """True after a stop token was accepted (or the grammar ended, see the constructor)."""
        return self._terminated

    def can_terminate(self) -> bool:
        """True if the grammar can end here (stop tokens are allowed)."""
        c = self._can_end
        if c is None:
            if self._top.shape[0] == 1:  # (one stack, most steps: read here, not by a kernel call)
                c = self._can_end = _one_stack_can_end(self._top.item(0), self._par.item(0), self._views[4],
                                                       self._pool)
            else:
                c = self._can_end = bool(_walk.can_end(self._top, self._par, self._top.shape[0],
                                                       self._rtn.final, self._pool.state, self._pool.parent))
        return c

    def _load_step_kernels(self) -> None:
        """Call, on nothing, the step kernels a matcher calls only with several stacks
        (:func:`._walk.can_end`) or a full frame pool (:func:`._walk.persist`), with the arrays it
        passes them: numba loads them now (:meth:`GrammarCompiler.warm_up`), not in the request
        that first needs them (~3 ms each from numba's cache, a compile without it)."""
        pool, sc = self._pool, self._rt.scratch()
        _walk.can_end(self._top, self._par, 0, self._rtn.final, pool.state, pool.parent)
        _walk.persist(sc.out_top, sc.out_par, 0, 0, sc.arena_state, sc.arena_parent, pool.state, pool.parent,
                      pool.depth, pool.size)

    def _save(self) -> None:
        if self.max_rollback_tokens == 0:
            return
        self._history.append(_State(self._top, self._par, self._terminated))
        if 0 < self.max_rollback_tokens < len(self._history):
            self._history.popleft()

    def rollback(self, num_tokens: int = 1) -> None:
        """Undo the last ``num_tokens`` accepted tokens."""
        if num_tokens < 0:
            raise ValueError("num_tokens must be >= 0")
        if num_tokens > len(self._history):
            raise MatcherError(
                f"cannot roll back {num_tokens} tokens: only {len(self._history)} kept "
                f"(max_rollback_tokens={self.max_rollback_tokens})"
            )
        for _ in range(num_tokens):
            st = self._history.pop()
            self._top, self._par, self._terminated = st.top, st.par, st.terminated
            self._can_end = None

    # ------------------------------------------------------------------ stepping
    def _advance(self, data: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool | None] | None:
        """The configuration after ``data``: ``(tops, parents, can it end)`` (None: not known yet),
        or None if ``data`` is rejected."""
        sc = self._rt.scratch()
        pool = self._pool
        info = sc.info
        info[2] = 0
        with pool.lock:
            n = _walk.advance_packed(self._top, self._par, self._top.shape[0], data, *self._rtn.step_pack,
                                     pool.block, pool.size, *sc.step_args)
            if n == 0:
                if info[2] > 0:
                    _raise_walk_error(int(info[2]))
                return None
            can_end: bool | None = None
            if info[2] == -1:  # pool full: grow, then persist
                pool.reserve(int(info[3]))
                size, n = _walk.persist(sc.out_top, sc.out_par, n, int(info[3]), sc.arena_state,
                                        sc.arena_parent, pool.state, pool.parent, pool.depth, pool.size)
                pool.size = int(size)
            else:
                pool.size = int(info[3])
                can_end = bool(info[4])
        return sc.out_top[:n].copy(), sc.out_par[:n].copy(), can_end

    def _advance_one(self, data: bytes, key: int) -> tuple[np.ndarray, np.ndarray, None] | object | None:
        """:meth:`_advance` for one stack when no byte of ``data`` leaves more than one stack, in
        Python: plain DFA steps, calls (their return frames kept aside until the token is read
        whole, then written to the pool as the kernel persists them), pops, and after the last byte
        the pops of dead ends -- what the step kernel does for such a stack; ``_KERNEL`` where a byte
        forks the stack (the kernel then steps the token). A kernel call's arguments cost ~1.8 µs, a
        plain byte stepped here ~0.15.

        The outcome depends on the top state, the token and the states of the frames below the top
        that the step read (popping into them, or finding the stack's bottom), nearest first: it is
        remembered in the grammar's step memo under ``key`` (the top state and the token), as those
        states, how many frames it popped, the new top and the frames it pushed -- or as a
        rejection (see :meth:`accept_token`)."""
        (trans, byte_class, simple, dead_end, final, ncls,
         chain_ptr, chain_target, push_ptr, push) = self._views
        t = self._top.item(0)
        p = _UNREAD
        ps = pp = None
        below: list[int] = []  # the pool frames read below the top, nearest first (a path down the stack)
        bottom = False  # (whether the step found the stack's bottom past them)
        new_s: list[int] = []  # frames pushed by this token: ids _ARENA + k (as the kernel's arena)
        new_p: list[int] = []
        for b in data:
            if simple[t]:
                t = trans[t * ncls + byte_class[b]]
                if t < 0:
                    return self._remember(key, below, bottom, _REJECTED)
                continue
            # a state that may call or pop: every way it can read the byte, as the step kernel's work
            # list explores them (a pop goes on in the caller's state), must come to one stack
            c = byte_class[b]
            if p == _UNREAD:
                p = self._par.item(0)
                ps, pp, _ = self._pool.views
            s, q = t, p
            t = j = -1
            while True:
                nt = trans[s * ncls + c]
                if nt >= 0:
                    if t >= 0:
                        return _KERNEL  # (two stacks, unless the kernel finds them the same)
                    t, p = nt, q
                for k in range(chain_ptr[s], chain_ptr[s + 1]):
                    nt = trans[chain_target[k] * ncls + c]
                    if nt >= 0:
                        if t >= 0:
                            return _KERNEL
                        t, p, j = nt, q, k
                if not final[s]:
                    break
                if q >= _ARENA:
                    s, q = new_s[q - _ARENA], new_p[q - _ARENA]
                elif q < 0:
                    bottom = True
                    break
                else:
                    if q not in below:
                        below.append(q)
                    s, q = ps[q], pp[q]  # type: ignore[index]
            if t < 0:
                return self._remember(key, below, bottom, _REJECTED)
            if j >= 0:  # entered through a call chain: its return frames, outermost first
                for k in range(push_ptr[j], push_ptr[j + 1]):
                    new_s.append(push[k])
                    new_p.append(p)
                    p = _ARENA + len(new_s) - 1
        if p == _UNREAD:
            par = self._par
            if not dead_end[t]:
                top = self._single_top(t)
                self._remember(key, below, bottom, (top, 0, ()))
                return top, par, None
            p = par.item(0)
            ps, pp, _ = self._pool.views
        while dead_end[t]:  # (only a pop can follow: the caller's state, as the kernel leaves it)
            if p >= _ARENA:
                t, p = new_s[p - _ARENA], new_p[p - _ARENA]
            elif p < 0:
                bottom = True
                break
            else:
                if p not in below:
                    below.append(p)
                t, p = ps[p], pp[p]  # type: ignore[index]
        top = self._single_top(t)
        chain = []  # the frames this token leaves pushed, callers first
        while p >= _ARENA:
            chain.append(new_s[p - _ARENA])
            p = new_p[p - _ARENA]
        chain.reverse()
        # (``below`` runs down from the top's parent: ``p`` is one of them, or the parent of the last)
        popped = below.index(p) if p in below else len(below)
        self._remember(key, below, bottom, (top, popped, tuple(chain)))
        if not chain:
            return top, self._par if popped == 0 else _one_int32(p), None
        return top, _one_int32(self._push_frames(p, chain)), None

    def _remember(self, key: int, below: list[int], bottom: bool, outcome: tuple | object) -> None:
        """Keep ``outcome`` in the step memo, with the states of the frames ``below`` the top the
        step read (and whether it found the bottom past them); returns None (a rejection's result)."""
        memo = self._cg._step_memo
        if len(memo) >= _STEP_MEMO_LIMIT:
            memo.clear()
        if below:
            ps = self._pool.views[0]
            memo[key] = (tuple([ps[f] for f in below]), bottom, outcome)
        else:
            memo[key] = ((), bottom, outcome)
        return None

    def _remembered(self, hit: tuple) -> tuple[np.ndarray, np.ndarray, None] | object | None:
        """The step memo's outcome ``hit`` applied to this stack, or ``_KERNEL`` where the frames
        below the top are not those the remembered step read."""
        states, bottom, outcome = hit
        par = self._par
        q = p = par.item(0)
        if states or bottom:
            ps, pp, _ = self._pool.views
            popped = outcome[1] if outcome is not _REJECTED else 0  # type: ignore[index]
            for i, st in enumerate(states):
                if q < 0 or ps[q] != st:
                    return _KERNEL
                q = pp[q]
                if i + 1 == popped:
                    p = q
            if bottom and q >= 0:
                return _KERNEL
        if outcome is _REJECTED:
            return None
        top, popped, pushed = outcome  # type: ignore[misc]
        if pushed:
            return top, _one_int32(self._push_frames(p, pushed)), None
        return top, par if popped == 0 else _one_int32(p), None

    def _single_top(self, state: int) -> np.ndarray:
        """The one-entry top array of ``state``, shared by every matcher of the grammar (configuration
        arrays are never written after they are made): a dict read, where making one is ~0.6 µs."""
        a = self._single_tops.get(state)
        if a is None:
            a = self._single_tops[state] = np.array([state], dtype=np.int32)
        return a

    def _push_frames(self, p: int, states: list[int] | tuple[int, ...]) -> int:
        """Write frames of ``states`` (callers first) into the pool, each the parent of the next,
        the first one's parent ``p`` (as :func:`._walk.persist` does); returns the last one's index."""
        pool = self._pool
        with pool.lock:
            free = pool.size
            if free + len(states) > len(pool.views[0]):
                pool.reserve(len(states))
            ps, pp, pd = pool.views
            depth = 0 if p < 0 else pd[p]
            for st in states:
                depth += 1
                ps[free], pp[free], pd[free] = st, p, depth
                p = free
                free += 1
            pool.size = free
        return p

    def accept_token(self, token_id: int) -> bool:
        """Advance by one token; False (state unchanged) if the grammar forbids it."""
        if self._terminated:
            return False
        token_id = int(token_id)
        if token_id in self._stop_set:
            if not self.can_terminate():
                return False
            self._save()
            self._terminated = True
            return True
        rt = self._rt
        if not (0 <= token_id < rt.vocab_size) or not rt.in_trie[token_id]:
            return False
        res = _KERNEL
        if self._top.shape[0] == 1:  # (one stack: most steps)
            key = self._top.item(0) * rt.vocab_size + token_id
            hit = self._cg._step_memo.get(key)
            if hit is not None:  # (this top read this token before: the same outcome where the same frames lie below)
                res = self._remembered(hit)
            if res is _KERNEL:
                res = self._advance_one(rt.info.token_bytes[token_id], key)
        if res is _KERNEL:
            res = self._advance(rt.token_data(token_id))
        if res is None:
            return False
        if self.max_rollback_tokens:
            self._save()
        self._top, self._par, self._can_end = res
        if self.terminate_without_stop_token:
            self._maybe_terminate()
        return True

    def accept_string(self, text: str | bytes) -> bool:
        """Advance by raw text (bytes or UTF-8); all-or-nothing. Counts as one rollback step."""
        if self._terminated:
            return False
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        if not data:
            return True
        res = self._advance(np.frombuffer(data, dtype=np.uint8))
        if res is None:
            return False
        self._save()
        self._top, self._par, self._can_end = res
        self._maybe_terminate()
        return True

    def _maybe_terminate(self) -> None:
        if self.terminate_without_stop_token and self.can_terminate() and not self._next_bytes_possible():
            self._terminated = True

    def _next_bytes_possible(self) -> bool:
        return bool(self._next_class_flags().any())

    def validate_tokens(self, token_ids: Sequence[int]) -> int:
        """How many leading tokens of ``token_ids`` would be accepted (state unchanged)."""
        probe = self.fork()
        probe.max_rollback_tokens = 0
        n = 0
        for t in token_ids:
            if not probe.accept_token(t):
                break
            n += 1
        return n

    # ------------------------------------------------------------------ masks
    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0) -> bool:
        """Write the allowed next tokens into row ``index`` of ``bitmask``.

        ``bitmask`` is an int32 array/tensor ``[batch, ceil(vocab/32)]`` (numpy, or torch on
        any device: CPU tensors are written in place, others through a host copy).
        Returns True (the mask must be applied).
        """
        if type(bitmask) is np.ndarray and bitmask.ndim == 2 and bitmask.shape[1] == self._rt.num_words \
                and bitmask.dtype == np.int32 and bitmask.flags.c_contiguous:  # (the common case, fast)
            self.fill_row(bitmask[index])
            return True
        row, commit = _row_view(bitmask, index, self._rt.num_words)
        self.fill_row(row)
        if commit is not None:
            commit()
        return True

    def fill_row(self, row: np.ndarray) -> None:
        """Fill one numpy int32 bitmask row (no checks; used by batch fill)."""
        if self._terminated:
            row[:] = 0
            _set_ids(row, self._stop_ids)
            return
        cg = self._cg
        pool = self._pool
        base = self._rt.base_row
        state_masks = cg._state_masks
        tops, pars = self._top, self._par
        if tops.shape[0] == 1:  # one stack, most steps: the loop below without its loop, one kernel call
            t = tops.item(0)
            kind, data, exits, _ = state_masks.get(t) or cg.state_mask(t)
            p = pars.item(0)
            ctx = _NO_IDS
            if p >= 0 and exits.shape[0]:
                ctx = pool.contexts.get(t << 32 | p)
                if ctx is None:
                    ctx = self._context(t, p)
            _write_row(row, kind, data, base, ctx, self._stop_ids if self.can_terminate() else _NO_IDS)
            return
        for k in range(tops.shape[0]):
            t = tops.item(k)
            kind, data, exits, _ = state_masks.get(t) or cg.state_mask(t)
            _write_set(row, kind, data, k == 0, base)
            p = pars.item(k)
            if p >= 0 and exits.shape[0]:
                _set_ids(row, self._context(t, p))
        if self.can_terminate():
            _set_ids(row, self._stop_ids)

    def _context(self, top: int, parent: int) -> np.ndarray:
        """The tokens stack ``(top, parent)`` adds to ``top``'s own (:meth:`CompiledGrammar.context_tokens`),
        remembered in the frame pool (bounded: cleared at ``_CONTEXT_MEMO_LIMIT`` stacks). (The
        one-stack fill reads the pool's memo itself first: a method call is a tenth of a step.)"""
        pool = self._pool
        memo = pool.contexts
        key = top << 32 | parent
        ids = memo.get(key)
        if ids is None:
            ids = self._cg.context_tokens(top, parent, pool)
            if len(memo) >= _CONTEXT_MEMO_LIMIT:
                memo.clear()
            memo[key] = ids
        return ids

    def get_next_token_ids(self) -> np.ndarray:
        """The allowed next token ids (convenience; slower than filling a bitmask)."""
        row = np.zeros(self._rt.num_words, dtype=np.int32)
        self.fill_row(row)
        bits = np.unpackbits(row.view(np.uint8), bitorder="little")[: self._rt.vocab_size]
        return np.flatnonzero(bits).astype(np.int32)

    # ------------------------------------------------------------------ jump forward
    def _next_class_flags(self) -> np.ndarray:
        rtn = self._rtn
        sc = self._rt.scratch()
        ok = np.zeros(rtn.num_classes, dtype=np.uint8)
        _walk.next_classes(
            self._top, self._par, self._top.shape[0],
            rtn.trans, rtn.num_classes, rtn.final, rtn.chain_ptr, rtn.chain_target,
            rtn.chain_push_ptr, rtn.chain_push, self._pool.state, self._pool.parent, self._pool.depth,
            sc.arena_state, sc.arena_parent, sc.out_top, sc.out_par, sc.work_top, sc.work_par, sc.info, ok,
        )
        return ok

    def find_jump_forward_bytes(self, max_bytes: int = 4096) -> bytes:
        """The bytes the grammar forces next (empty if there is a choice or it may end)."""
        if self._terminated:
            return b""
        probe = self.fork()
        out = bytearray()
        masks = self._rtn.class_masks
        while len(out) < max_bytes:
            if probe.can_terminate():
                break
            ok = np.flatnonzero(probe._next_class_flags())
            if ok.shape[0] != 1:
                break
            m = masks[int(ok[0])]
            if m & (m - 1):
                break  # several bytes possible
            b = m.bit_length() - 1
            # (read-only bytes, as a token's and a string's are: one argument type, one compile)
            res = probe._advance(np.frombuffer(bytes((b,)), dtype=np.uint8))
            if res is None:  # pragma: no cover - flags said it was possible
                break
            probe._top, probe._par, probe._can_end = res
            out.append(b)
        return bytes(out)

    def find_jump_forward_string(self) -> str:
        """The text the grammar forces next, cut to whole UTF-8 characters."""
        data = self.find_jump_forward_bytes()
        for cut in range(len(data), max(-1, len(data) - 4), -1):
            try:
                return data[:cut].decode("utf-8")
            except UnicodeDecodeError:
                continue
        return ""

    def __repr__(self) -> str:
        return f"GrammarMatcher(stacks={self._top.shape[0]}, terminated={self._terminated})"


#: :meth:`GrammarMatcher._advance_one` leaves the token to the step kernel (a byte of it forks the stack)
_KERNEL = object()
_NO_IDS = np.zeros(0, dtype=np.int32)
_UNREAD = -3  # (the stack's parent, not read yet; -1 and -2 are _walk's BOTTOM and EXIT)
_ARENA = _walk.ARENA


_ONE_INT32 = np.zeros(1, dtype=np.int32)
#: a rejection in the step memo (:meth:`GrammarMatcher._advance_one`)
_REJECTED = object()
#: entries a grammar's step memo holds (top state and token -> outcome; ~300 bytes each), cleared when full
_STEP_MEMO_LIMIT = 16_384


def _one_int32(value: int) -> np.ndarray:
    """``[value]`` as an int32 array (~0.3 µs; ``np.array([value], dtype=np.int32)`` is ~0.6)."""
    a = _ONE_INT32.copy()
    a[0] = value
    return a


_CONTEXT_MEMO_LIMIT = 1024  # stacks whose context tokens a frame pool remembers (entries, as the grammar's tree)


def _matcher_views(rtn) -> tuple:
    """``(trans, byte_class, simple, dead_end, final, class count, chain_ptr, chain_target,
    chain_push_ptr, chain_push)`` of ``rtn``, the arrays as memoryviews (an index read from Python:
    ~35 ns, ~90 through numpy), made once per grammar."""
    v = rtn.__dict__.get("_matcher_views")
    if v is None:
        v = rtn.__dict__["_matcher_views"] = (memoryview(rtn.trans), memoryview(rtn.byte_class),
                                            memoryview(rtn.simple), memoryview(rtn.dead_end),
                                            memoryview(rtn.final), int(rtn.num_classes),
                                            memoryview(rtn.chain_ptr), memoryview(rtn.chain_target),
                                            memoryview(rtn.chain_push_ptr), memoryview(rtn.chain_push))
    return v


def _one_stack_can_end(top: int, par: int, final: memoryview, pool: FramePool) -> bool:
    """Whether the one stack ``(top, par)`` can end the grammar: its top and every frame below final."""
    if not final[top]:
        return False
    ps, pp, _ = pool.views
    while par >= 0:
        if not final[ps[par]]:
            return False
        par = pp[par]
    return True


def _set_ids(row: np.ndarray, ids: np.ndarray) -> None:
    if ids.shape[0]:
        _walk.set_bits(row, ids)


def _row_view(bitmask: Any, index: int, num_words: int):
    """A writable numpy view of one bitmask row, plus a commit callback for device tensors."""
    if isinstance(bitmask, np.ndarray):
        arr = bitmask
        commit = None
    else:
        try:
            import torch
        except ImportError as exc:  # pragma: no cover
            raise TypeError(f"unsupported bitmask type {type(bitmask).__name__}") from exc
        if not isinstance(bitmask, torch.Tensor):
            raise TypeError(f"bitmask must be a numpy array or torch tensor, got {type(bitmask).__name__}")
        if bitmask.dtype != torch.int32:
            raise TypeError(f"bitmask must be int32, got {bitmask.dtype}")
        if bitmask.device.type == "cpu":
            arr = bitmask.numpy()
            commit = None
        else:
            host = np.zeros(num_words, dtype=np.int32)
            dev_row = bitmask[index] if bitmask.dim() == 2 else bitmask

            def commit() -> None:
                dev_row.copy_(torch.from_numpy(host), non_blocking=False)

            return host, commit
    if arr.dtype != np.int32:
        raise TypeError(f"bitmask must be int32, got {arr.dtype}")
    row = arr[index] if arr.ndim == 2 else arr
    if row.shape[-1] < num_words:
        raise ValueError(f"bitmask rows have {row.shape[-1]} words, need {num_words} for this vocabulary")
    if row.shape[-1] > num_words:
        row[num_words:] = 0
        row = row[:num_words]
    if not row.flags.c_contiguous:
        raise ValueError("bitmask rows must be contiguous")
    return row, commit
