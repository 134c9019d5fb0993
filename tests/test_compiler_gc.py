"""The cyclic garbage collector is paused while a grammar compiles, and left as it was found."""

from __future__ import annotations

import gc
import threading

import pytest

from engine_cases import small_vocab
from logitgate import GrammarCompiler
from logitgate.engine import compiler as compiler_module
from logitgate.errors import GrammarError
from logitgate.grammar.ir import Grammar, lit

VOCAB = small_vocab(["abc"])


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """``gc.isenabled()`` as each compile's automaton construction saw it."""
    states: list[bool] = []
    real = compiler_module.compile_rtn

    def spy(grammar, limits=None):
        states.append(gc.isenabled())
        return real(grammar, limits)

    monkeypatch.setattr(compiler_module, "compile_rtn", spy)
    return states


def test_the_collector_is_paused_during_a_compile_and_enabled_after(seen: list[bool]) -> None:
    assert gc.isenabled()
    GrammarCompiler(VOCAB).compile_regex("[ab]+c")
    assert seen == [False] and gc.isenabled()


def test_a_collector_disabled_before_stays_disabled(seen: list[bool]) -> None:
    gc.disable()
    try:
        GrammarCompiler(VOCAB).compile_regex("[ab]+c")
        assert seen == [False] and not gc.isenabled()
    finally:
        gc.enable()


def test_a_failing_compile_enables_the_collector_again() -> None:
    with pytest.raises(GrammarError):
        GrammarCompiler(VOCAB).compile_grammar("root ::= root")  # left recursion
    assert gc.isenabled()


def test_pause_gc_false_leaves_the_collector_running(seen: list[bool]) -> None:
    GrammarCompiler(VOCAB, pause_gc=False).compile_regex("[ab]+c")
    assert seen == [True] and gc.isenabled()


def test_concurrent_compiles_share_one_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    """The collector comes back when the last compile under way ends, not the first."""
    real = compiler_module.compile_rtn
    slow_entered, release = threading.Event(), threading.Event()

    def compile_rtn(grammar, limits=None):
        if grammar.root == "slow":
            slow_entered.set()
            assert release.wait(10)
        return real(grammar, limits)

    monkeypatch.setattr(compiler_module, "compile_rtn", compile_rtn)
    c = GrammarCompiler(VOCAB)
    slow = threading.Thread(target=c.compile_grammar, args=(Grammar({"slow": lit("ab")}, root="slow"),))
    slow.start()
    try:
        assert slow_entered.wait(10)
        c.compile_regex("[ab]+c")  # starts and ends while the slow one is under way
        assert not gc.isenabled()
    finally:
        release.set()
        slow.join(10)
    assert gc.isenabled()


def test_a_refused_compile_reaches_its_caller_holding_nothing_it_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal's traceback keeps the frames it passed through, and through them what the compile
    built (a conversion refused at its rule limit: millions of objects, which the collector,
    enabled again, walked before the error reached the caller). The frames' locals are cleared on
    the way out -- those of the exceptions it was raised from too; the traceback's lines stay."""
    import traceback as tb_module

    from logitgate.engine.automata import Program
    from logitgate.engine.rtn import CompileLimits
    from logitgate.errors import LimitExceededError

    real = compiler_module.compile_rtn

    def compile_rtn_raising_from(grammar, limits=None):  # (an error raised from another, as wrappers do)
        try:
            return real(grammar, limits)
        except LimitExceededError as inner:
            raise GrammarError("refused") from inner

    compiler = GrammarCompiler(VOCAB, limits=CompileLimits(max_dfa_states=3))
    for compile_rtn in (real, compile_rtn_raising_from):
        monkeypatch.setattr(compiler_module, "compile_rtn", compile_rtn)
        gc.collect()
        gc.disable()
        try:
            with pytest.raises(GrammarError) as info:
                compiler.compile_regex("(ab|cd|ef)+x[0-9]{4}")
            alive = [o for o in gc.get_objects() if type(o) is Program]
            lines = tb_module.format_tb(info.value.__traceback__)
        finally:
            gc.enable()
        assert alive == [] and any("compile_rtn" in line or "determinize" in line for line in lines), lines
