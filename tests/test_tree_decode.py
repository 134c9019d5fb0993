"""Tree decode (seed 000): the compiled trie against the seed's string-keyed semantics."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logitgate.errors import LogitgateError
from logitgate.processors import tree_decode as td
from logitgate.processors.tree_decode import (
    TreeDecodeConfig,
    TreeDecodeConfigError,
    add_tree_decode_argument,
    resolve_tree_decode_config,
)

# The seed's example config, verbatim.
SEED_EXAMPLE = {
    "start_token_id": 225,
    "end_token_id": 2,
    "sep": "_",
    "prefix_dict": {"225_64000": [64001, 64002], "225_64000_64001": [2]},
}
# The same with first-step candidates under the root key "225" (as in RTP-LLM's own tests).
ROOTED = {**SEED_EXAMPLE, "prefix_dict": {"225": [64000, 64003, 64006, 64008], **SEED_EXAMPLE["prefix_dict"]}}


def bits(row: np.ndarray) -> list[int]:
    return np.flatnonzero(np.unpackbits(row.view(np.uint8), bitorder="little")).tolist()


def write(tmp_path, obj, name="tree.json", **dump_kw) -> str:
    p = tmp_path / name
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj, **dump_kw))
    return str(p)


class RefTree:
    """The seed's semantics with strings and a dict (the reference for the trie)."""

    def __init__(self, cfg: dict):
        self.start, self.end, self.sep = cfg["start_token_id"], cfg["end_token_id"], cfg.get("sep", "_")
        self.d = {k: sorted(set(v)) for k, v in cfg["prefix_dict"].items()}
        self.status = str(self.start)
        self.error = self.finished = False

    def allowed(self) -> list[int]:
        if self.error:
            return [self.end]
        return self.d.get(self.status) or [self.end]

    def accept(self, t: int) -> bool:
        if self.finished:
            return t == self.end
        allowed = self.allowed()
        self.status += self.sep + str(t)
        if self.error:
            self.finished = t == self.end
            return t == self.end
        if t in allowed or t == self.end:
            self.finished = t == self.end
            return True
        self.error = True
        return False


# ---------------------------------------------------------------------------------------------
# the seed's example and scripted scenarios
# ---------------------------------------------------------------------------------------------


def test_seed_example_verbatim_root_key_missing_allows_only_end():
    cfg = TreeDecodeConfig.from_dict(SEED_EXAMPLE)
    s = cfg.new_state()
    assert s.status == "225"
    assert s.allowed_token_ids().tolist() == [2]  # "225" is not a key: only end
    assert cfg.candidates("225_64000").tolist() == [64001, 64002]
    assert cfg.candidates("225_64000_64001").tolist() == [2]
    assert cfg.candidates("225") is None
    assert s.accept_token(64000) is False and s.is_error  # not a candidate at the root
    assert s.allowed_token_ids().tolist() == [2]


def test_rooted_example_walk_statuses_and_allowed_sets():
    cfg = TreeDecodeConfig.from_dict(ROOTED, vocab_size=100_000)
    s = cfg.new_state()
    seen = []
    for tok in (64000, 64001, 2):
        seen.append(s.allowed_token_ids().tolist())
        assert s.accept_token(tok)
    assert seen == [[64000, 64003, 64006, 64008], [64001, 64002], [2]]
    assert s.status == "225_64000_64001_2" and s.is_finished and not s.is_error
    # after end the state freezes (the seed's TreeDFA ignores later tokens)
    assert s.accept_token(1) is False
    assert s.status == "225_64000_64001_2" and s.allowed_token_ids().tolist() == [2]


def test_candidate_without_key_allows_only_end():
    cfg = TreeDecodeConfig.from_dict(ROOTED)
    s = cfg.new_state()
    assert s.accept_token(64003)  # a candidate, but "225_64003" is not a key
    assert s.status == "225_64003" and not s.is_error
    assert s.allowed_token_ids().tolist() == [2]
    assert s.node == cfg.sink


def test_error_state_is_sticky_until_end():
    cfg = TreeDecodeConfig.from_dict(ROOTED)
    s = cfg.new_state()
    assert s.accept_token(64000)
    assert s.accept_token(64005) is False  # outside [64001, 64002]
    assert s.is_error and s.allowed_token_ids().tolist() == [2]
    assert s.accept_token(64001) is False  # even a token that was a candidate before
    assert s.is_error and s.allowed_token_ids().tolist() == [2]
    assert s.accept_token(2) and s.is_finished and s.is_error
    row = np.zeros(70_000 // 32 + 1, dtype=np.int32)
    s.fill_bitmask(row)
    assert bits(row) == [2]


def test_end_outside_candidates_finishes_without_error():
    cfg = TreeDecodeConfig.from_dict(ROOTED)
    s = cfg.new_state()
    assert 2 not in s.allowed_token_ids().tolist()
    assert s.accept_token(2) and s.is_finished and not s.is_error


def test_key_through_end_token_is_followed_then_frozen():
    # the seed moves to status + sep + end and looks that key up; later tokens are ignored
    cfg = TreeDecodeConfig.from_dict({"start_token_id": 9, "end_token_id": 2, "prefix_dict": {"9": [2, 4], "9_2": [5]}})
    s = cfg.new_state()
    assert s.accept_token(2) and s.is_finished
    assert s.allowed_token_ids().tolist() == [5]
    assert s.accept_token(5) is False and s.status == "9_2"


def test_empty_list_duplicates_and_order():
    cfg = TreeDecodeConfig.from_dict({"start_token_id": 1, "end_token_id": 0, "sep": "-",
                                      "prefix_dict": {"1": [9, 3, 9, 7], "1-3": [], "1-7": [3]}})
    s = cfg.new_state()
    assert s.allowed_token_ids().tolist() == [3, 7, 9]
    f = s.fork()
    s.accept_token(3)
    assert s.allowed_token_ids().tolist() == [0]  # empty list = only end
    f.accept_token(7)
    assert f.allowed_token_ids().tolist() == [3]
    assert cfg.to_dict()["prefix_dict"] == {"1": [3, 7, 9], "1-3": [], "1-7": [3]}


def test_foreign_keys_are_never_reached():
    cfg = TreeDecodeConfig.from_dict({"start_token_id": 1, "end_token_id": 0, "prefix_dict": {"1": [5], "2_5": [6]}})
    assert cfg.num_keys == 2 and cfg.num_foreign_keys == 1
    s = cfg.new_state()
    s.accept_token(5)
    assert s.allowed_token_ids().tolist() == [0]


def test_fill_bitmask_restrict_and_small_rows():
    cfg = TreeDecodeConfig.from_dict(ROOTED)
    s = cfg.new_state()
    row = np.full(70_000 // 32 + 1, -1, dtype=np.int32)
    assert s.fill_bitmask(row) is True
    assert bits(row) == [64000, 64003, 64006, 64008]
    other = np.zeros_like(row)
    other[2000] = 0b1001011  # 64000 == 2000 * 32: allows 64000, 64001, 64003, 64006
    other[5] = -1
    s.restrict(other)
    assert bits(other) == [64000, 64003, 64006]
    with pytest.raises(IndexError):
        s.fill_bitmask(np.zeros(10, dtype=np.int32))
    with pytest.raises(TypeError):
        s.fill_bitmask(np.zeros(3000, dtype=np.int64))


def test_rollback_fork_reset():
    cfg = TreeDecodeConfig.from_dict(ROOTED)
    s = cfg.new_state()
    s.accept_tokens([64000, 64009, 2, 7])  # error, then end, then an ignored token
    assert s.is_finished and s.is_error and s.num_accepted == 4
    f = s.fork()
    s.rollback(2)
    assert not s.is_finished and s.is_error and s.status == "225_64000_64009"
    s.rollback(1)
    assert not s.is_error and s.status == "225_64000" and s.allowed_token_ids().tolist() == [64001, 64002]
    assert f.is_finished and f.status == "225_64000_64009_2"  # the fork did not move
    with pytest.raises(ValueError):
        s.rollback(5)
    s.reset()
    assert s.status == "225" and s.node == 0 and s.num_accepted == 0


# ---------------------------------------------------------------------------------------------
# files: fast path, json path, malformed input
# ---------------------------------------------------------------------------------------------


def test_from_file_fast_path_matches_from_dict(tmp_path, monkeypatch):
    p = write(tmp_path, ROOTED, indent=2)
    ref = TreeDecodeConfig.from_dict(ROOTED).to_dict()

    def no_json(*a, **k):
        raise AssertionError("the ordinary file should not need the json path")

    monkeypatch.setattr(TreeDecodeConfig, "from_dict", classmethod(lambda cls, *a, **k: no_json()))
    cfg = TreeDecodeConfig.from_file(p)
    assert cfg.to_dict() == ref and cfg.source == p


@pytest.mark.parametrize("text", [
    # sep after prefix_dict, no whitespace, duplicate key (last wins), extra member
    '{"prefix_dict":{"7":[1,2],"7|1":[3],"7":[1,4]},"end_token_id":0,"sep":"|","start_token_id":7,"x":null}',
    # a nested extra member forces the json path; same answer
    '{"meta": {"a": [1]}, "start_token_id": 7, "end_token_id": 0, "sep": "|",\n'
    ' "prefix_dict": {"7": [1, 2], "7|1": [3], "7": [1, 4]}}',
    # a multi-character separator with whitespace inside goes through json too
    '{"start_token_id": 7, "end_token_id": 0, "sep": "| ", "prefix_dict": {"7": [1, 2], "7| 1": [3], "7": [1,4]}}',
])
def test_file_shapes_agree(tmp_path, text):
    cfg = TreeDecodeConfig.from_file(write(tmp_path, text))
    s = cfg.new_state()
    assert s.allowed_token_ids().tolist() == [1, 4]  # the later "7" wins
    s.accept_token(1)
    assert s.allowed_token_ids().tolist() == [3]


@pytest.mark.parametrize("text, fragment", [
    ('{"start_token_id": 1, "end_token_id": 0, "prefix_dict": {"1": [2,]}}', "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"end_token_id": 0, "prefix_dict": {}}', "missing 'start_token_id'"),
    ('{"start_token_id": "1", "end_token_id": 0, "prefix_dict": {}}', "'start_token_id' must be an integer"),
    ('{"start_token_id": 1, "end_token_id": true, "prefix_dict": {}}', "'end_token_id' must be an integer"),
    ('{"start_token_id": 1, "end_token_id": 0}', "missing 'prefix_dict'"),
    ('{"start_token_id": 1, "end_token_id": 0, "prefix_dict": [1]}', "'prefix_dict' must be an object"),
    ('{"start_token_id": 1, "end_token_id": 0, "sep": "", "prefix_dict": {}}', "'sep' must be a non-empty"),
    ('{"start_token_id": 1, "end_token_id": 0, "sep": "a1", "prefix_dict": {}}', "contains a digit"),
    ('{"start_token_id": 1, "end_token_id": 0, "prefix_dict": {"1_x": [2]}}', "part 'x' is not a canonical"),
    ('{"start_token_id": 1, "end_token_id": 0, "prefix_dict": {"1__2": [2]}}', "part '' is empty"),
    ('{"start_token_id": 1, "end_token_id": 0, "prefix_dict": {"1_02": [2]}}', "part '02' is not a canonical"),
    ('{"start_token_id": 1, "end_token_id": 0, "prefix_dict": {"1": [-2]}}', "outside [0, 2**31)"),
    ('{"start_token_id": 1, "end_token_id": 0, "prefix_dict": {"1": [2.5]}}', "not an integer token id"),
    ('{"start_token_id": 1, "end_token_id": 0, "prefix_dict": {"1": ["2"]}}', "not an integer token id"),
    ('{"start_token_id": 1, "end_token_id": 0, "prefix_dict": {"1": 2}}', "must be a list of token ids"),
    ('{"start_token_id": 1, "end_token_id": 0, "prefix_dict": {"1": [99999999999]}}', "out of the int32 range"),
    ('{"start_token_id": 1, "end_token_id": 0, "prefix_dict": {"1_4294967298": [1]}}', "out of the int32 range"),
])
def test_malformed_files_name_file_and_problem(tmp_path, text, fragment):
    p = write(tmp_path, text)
    with pytest.raises(TreeDecodeConfigError) as ei:
        TreeDecodeConfig.from_file(p)
    assert fragment in str(ei.value) and p in str(ei.value)
    assert isinstance(ei.value, LogitgateError) and isinstance(ei.value, ValueError)


def test_json_error_has_line_and_column(tmp_path):
    p = write(tmp_path, '{\n  "start_token_id": 1,\n  "end_token_id": 0\n  "prefix_dict": {}\n}')
    with pytest.raises(TreeDecodeConfigError, match=r"line 4, column 3"):
        TreeDecodeConfig.from_file(p)


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(TreeDecodeConfigError, match="cannot read"):
        TreeDecodeConfig.from_file(tmp_path / "nope.json")


@pytest.mark.parametrize("mutate, fragment", [
    (lambda d: d.update(start_token_id=70000), "start_token_id = 70000"),
    (lambda d: d.update(end_token_id=65536), "end_token_id = 65536"),
    (lambda d: d["prefix_dict"].update({"225_64000_64002": [65536]}), "candidate token id 65536"),
    (lambda d: d["prefix_dict"].update({"225_65537": [2]}), "key token id 65537"),
])
def test_ids_outside_vocabulary(tmp_path, mutate, fragment):
    d = json.loads(json.dumps(ROOTED))
    mutate(d)
    for load in (lambda: TreeDecodeConfig.from_dict(d, vocab_size=65536),
                 lambda: TreeDecodeConfig.from_file(write(tmp_path, d), vocab_size=65536)):
        with pytest.raises(TreeDecodeConfigError, match="vocabulary") as ei:
            load()
        assert fragment in str(ei.value)


# ---------------------------------------------------------------------------------------------
# enabling: flag / env var resolved against the checkpoint
# ---------------------------------------------------------------------------------------------


def test_resolution_flag_env_and_disabled(tmp_path):
    write(tmp_path, ROOTED, name="a.json")
    write(tmp_path, SEED_EXAMPLE, name="b.json")
    assert resolve_tree_decode_config(None, tmp_path, environ={}) is None
    by_env = resolve_tree_decode_config(None, tmp_path, environ={"TREE_DECODE_CONFIG": "a.json"})
    assert by_env.source == f"{tmp_path}/a.json" and by_env.candidates("225") is not None
    by_flag = resolve_tree_decode_config("b.json", tmp_path, environ={"TREE_DECODE_CONFIG": "a.json"})
    assert by_flag.source == f"{tmp_path}/b.json" and by_flag.candidates("225") is None
    assert resolve_tree_decode_config("", tmp_path, environ={"TREE_DECODE_CONFIG": ""}) is None


def test_resolution_uses_process_env(tmp_path, monkeypatch):
    write(tmp_path, ROOTED, name="a.json")
    monkeypatch.setenv("TREE_DECODE_CONFIG", "a.json")
    assert resolve_tree_decode_config(ckpt_path=str(tmp_path)).num_keys == 3


def test_resolution_errors_and_lenient_mode(tmp_path, caplog):
    write(tmp_path, "not json", name="bad.json")
    with pytest.raises(TreeDecodeConfigError, match=r"bad\.json"):
        resolve_tree_decode_config("bad.json", tmp_path, environ={})
    with pytest.raises(TreeDecodeConfigError, match=r"missing\.json"):
        resolve_tree_decode_config("missing.json", tmp_path, environ={})
    with pytest.raises(TreeDecodeConfigError, match="no checkpoint path"):
        resolve_tree_decode_config("a.json", None, environ={})
    with caplog.at_level(logging.WARNING, logger=td.__name__):
        assert resolve_tree_decode_config("bad.json", tmp_path, environ={}, strict=False) is None
    assert "tree decode disabled" in caplog.text


def test_cli_argument():
    p = argparse.ArgumentParser()
    add_tree_decode_argument(p)
    assert p.parse_args(["--tree_decode_config", "t.json"]).tree_decode_config == "t.json"
    assert p.parse_args(["--tree-decode-config", "u.json"]).tree_decode_config == "u.json"
    assert p.parse_args([]).tree_decode_config is None


# ---------------------------------------------------------------------------------------------
# property test: trie == dict reference on random configs and random walks
# ---------------------------------------------------------------------------------------------

TOK = st.integers(0, 6)


@st.composite
def configs(draw):
    start, end = draw(TOK), draw(TOK)
    sep = draw(st.sampled_from(["_", "|", "->", "::", ", "]))
    keys = draw(st.lists(st.lists(TOK, min_size=0, max_size=3), max_size=25))
    pd = {}
    for tail in keys:
        first = start if draw(st.booleans()) or draw(st.booleans()) else draw(TOK)
        pd[sep.join(map(str, [first, *tail]))] = draw(st.lists(TOK, max_size=4))
    return {"start_token_id": start, "end_token_id": end, "sep": sep, "prefix_dict": pd}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cfg=configs(), walks=st.lists(st.lists(TOK, max_size=7), min_size=1, max_size=4), indent=st.sampled_from([None, 1]))
def test_trie_matches_reference(tmp_path, cfg, walks, indent):
    compiled = TreeDecodeConfig.from_dict(cfg, vocab_size=7)
    path = write(tmp_path, cfg, indent=indent)
    from_file = TreeDecodeConfig.from_file(path, vocab_size=7)
    if " " not in cfg["sep"]:  # ordinary files take the vectorized path
        data = Path(path).read_bytes()
        _, (lo, hi) = td._scan_top_level(data)
        assert td._parse_body_fast(data, lo, hi, cfg["sep"], path) is not None
    expected = {k: sorted(set(v)) for k, v in cfg["prefix_dict"].items()
                if k.split(cfg["sep"])[0] == str(cfg["start_token_id"])}
    assert compiled.to_dict()["prefix_dict"] == expected
    assert from_file.to_dict() == compiled.to_dict()
    row = np.zeros(1, dtype=np.int32)
    for walk in walks:
        ref, s = RefTree(cfg), from_file.new_state()
        for tok in walk:
            assert s.allowed_token_ids().tolist() == ref.allowed()
            s.fill_bitmask(row)
            assert bits(row) == ref.allowed()
            assert s.accept_token(tok) == ref.accept(tok)
            assert (s.status, s.is_error, s.is_finished) == (ref.status, ref.error, ref.finished)
        assert s.allowed_token_ids().tolist() == ref.allowed()
        s.rollback(len(walk))
        assert s.status == str(cfg["start_token_id"]) and not s.is_error


def test_benchmark_module_runs_small(capsys):
    from logitgate.benchmarks import tree_decode as bench

    p = argparse.ArgumentParser()
    bench.add_arguments(p)
    args = p.parse_args(["--keys", "3000", "--branching", "20,10", "--repeats", "1", "--walks", "20",
                         "--vocab", "5000"])
    assert bench.run(args) == 0
    out = capsys.readouterr().out
    assert "3,000 keys" in out and "from_file" in out and "accept_token" in out


def test_empty_prefix_dict_allows_only_end(tmp_path):
    cfg = TreeDecodeConfig.from_file(write(tmp_path, '{"start_token_id": 3, "end_token_id": 1, "prefix_dict": {}}'))
    assert cfg.num_keys == 0 and cfg.new_state().allowed_token_ids().tolist() == [1]


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_non_ascii_separator_and_odd_whitespace(tmp_path, ensure_ascii):
    d = {"start_token_id": 3, "end_token_id": 1, "sep": "→", "prefix_dict": {"3": [4, 5], "3→4": [6]}}
    text = json.dumps(d, ensure_ascii=ensure_ascii).replace(", ", ",\r\n\t")
    p = tmp_path / "t.json"
    p.write_bytes(text.encode("utf-8"))
    cfg = TreeDecodeConfig.from_file(p)
    assert cfg.to_dict() == d
    s = cfg.new_state()
    s.accept_token(4)
    assert s.status == "3→4" and s.allowed_token_ids().tolist() == [6]


def test_torch_cpu_rows():
    torch = pytest.importorskip("torch")
    s = TreeDecodeConfig.from_dict(ROOTED).new_state()
    row = torch.full((70_000 // 32 + 1,), -1, dtype=torch.int32)
    s.fill_bitmask(row)
    assert bits(row.numpy()) == [64000, 64003, 64006, 64008]
