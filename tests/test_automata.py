"""The automata kernels against brute force on random DFAs: minimization, trimming, products."""

from __future__ import annotations

import itertools
import random

import pytest

from logitgate.engine.automata import ALL_BYTES, DFA, _product, minimize, trim


def random_dfa(rng: random.Random, n: int, k: int = 3, density: float = 0.7) -> DFA:
    classes = [1 << b for b in range(k - 1)] + [ALL_BYTES & ~((1 << (k - 1)) - 1)]
    trans = [[rng.randrange(n) if rng.random() < density else -1 for _ in range(k)] for _ in range(n)]
    final = [rng.random() < 0.3 for _ in range(n)]
    final[rng.randrange(n)] = True
    return DFA(classes, trans, final, [{} for _ in range(n)], 0)


def language(d: DFA, max_len: int) -> set[tuple[int, ...]]:
    """Every accepted word (as class sequences) up to ``max_len`` symbols."""
    out = set()
    for length in range(max_len + 1):
        for word in itertools.product(range(len(d.classes)), repeat=length):
            s = d.start
            for c in word:
                s = d.trans[s][c]
                if s < 0:
                    break
            else:
                if d.final[s]:
                    out.add(word)
    return out


def distinguishable_pairs(d: DFA) -> set[tuple[int, int]]:
    """Table filling (Myhill-Nerode): the pairs of states some word tells apart (-1 = reject sink)."""
    states = [*range(d.num_states), -1]

    def step(s: int, c: int) -> int:
        return -1 if s < 0 else d.trans[s][c]

    def accepting(s: int) -> bool:
        return s >= 0 and d.final[s]

    marked = {(a, b) for a, b in itertools.combinations(states, 2) if accepting(a) != accepting(b)}
    changed = True
    while changed:
        changed = False
        for a, b in itertools.combinations(states, 2):
            if (a, b) in marked:
                continue
            for c in range(len(d.classes)):
                x, y = step(a, c), step(b, c)
                if x != y and ((x, y) in marked or (y, x) in marked):
                    marked.add((a, b))
                    changed = True
                    break
    return marked


@pytest.mark.parametrize("seed", range(30))
def test_minimize_keeps_the_language_and_merges_every_equivalent_pair(seed: int) -> None:
    rng = random.Random(seed)
    d = trim(random_dfa(rng, rng.randint(2, 12)))
    if d is None:
        return
    m = minimize(d)
    assert m.num_states <= d.num_states
    assert language(m, 6) == language(d, 6)
    # minimal: every two states of the result are told apart by some word
    marked = distinguishable_pairs(m)
    for a, b in itertools.combinations(range(m.num_states), 2):
        assert (a, b) in marked, (a, b)


@pytest.mark.parametrize("seed", range(30))
def test_trim_keeps_the_language_and_only_live_states(seed: int) -> None:
    rng = random.Random(seed)
    d = random_dfa(rng, rng.randint(1, 10), density=0.5)
    t = trim(d)
    if t is None:
        assert not language(d, d.num_states)
        return
    assert language(t, 6) == language(d, 6)
    for s in range(t.num_states):  # every state reaches a final state
        assert language(DFA(t.classes, t.trans, t.final, t.calls, s), t.num_states)


@pytest.mark.parametrize("seed", range(20))
def test_product_accepts_the_intersection(seed: int) -> None:
    rng = random.Random(seed)
    a, b = random_dfa(rng, rng.randint(1, 8)), random_dfa(rng, rng.randint(1, 8))
    p = _product(a, b, 10_000)
    assert language(p, 6) == language(a, 6) & language(b, 6)
