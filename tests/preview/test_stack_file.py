"""The front door: a stack file read as Pulumi reads it (YAML 1.2 scalars as go-yaml v3 resolves
them, duplicate keys refused), only config values Pulumi can hold, bounded in size, nesting and
alias expansion; every mistake names the file and the key."""

from __future__ import annotations

import resource
import time

import pytest

from preview.__main__ import main
from preview.stack_file import MAX_BYTES, StackFileError, parse, read_stack_file, resolve_stack


@pytest.mark.parametrize(
    "text, expected",
    [
        # go-yaml v3.0.1 resolve.go: the YAML 1.1 booleans and sexagesimals are text (resolve.go:35-68).
        ("create: yes", "yes"),
        ("create: on", "on"),
        ("create: True", True),
        ("time: 1:30", "1:30"),
        # Integers in Go's base-0 syntax, underscores removed first (resolve.go:191-199): a leading 0 is octal.
        ("mode: 0o17", 15),
        ("mode: 0O17", 15),
        ("mode: +0o17", 15),
        ("mode: 0777", 511),
        ("mode: 0x1F", 31),
        ("mode: 0X1F", 31),
        ("mode: -0x1F", -31),
        ("mode: 0b101", 5),
        ("size: 1_000", 1000),
        ("version: 1.30", 1.3),  # a number: the config model says to quote it
        ("size: 1_000.5", 1000.5),
        # Go's JSON writes a float with no fraction as an integer (config/object.go MarshalJSON).
        ("size: 4.0", 4),
        ("size: 089", 89),
        # Not numbers to go-yaml: a 400-digit integer overflows every Go type, and so does 1e400.
        ("size: " + "9" * 400, "9" * 400),
        ("size: 1e400", "1e400"),
        # ... and past Python's 4300-digit limit for int() too: text, never a ValueError of our own.
        ("size: " + "9" * 5000, "9" * 5000),
        ("size: 0x" + "f" * 5000, "0x" + "f" * 5000),
        # Timestamps go-yaml does not parse are text (resolve.go:306-326: layouts need the seconds).
        ("approval: 2024-01-01 later", "2024-01-01 later"),
        ("approval: 2024-01-01T10:00", "2024-01-01T10:00"),
        ("x: [~]", [None]),
        # An ARN in a flow list, as go-yaml (a libyaml port) reads it.
        ("admins: [arn:aws:iam::123456789012:role/x]", ["arn:aws:iam::123456789012:role/x"]),
    ],
)
def test_values_are_read_as_pulumi_reads_them(text, expected):
    key = text.split(":")[0]
    assert parse("config:\n  gpu-platform:" + text, "f.yaml") == {f"gpu-platform:{key}": expected}


def test_a_section_given_as_json_text_is_decoded_as_the_program_decodes_it():
    # Inside JSON text, 4.0 stays a float: the program json.loads the text itself.
    assert parse('config:\n  gpu-platform:audit: \'{"owner": "a", "n": 4.0}\'', "f.yaml") == {
        "gpu-platform:audit": {"owner": "a", "n": 4.0}
    }


def test_a_key_without_a_namespace_is_the_projects_as_pulumi_puts_it():
    assert parse("config:\n  monitoring: {dashboard: true}", "f.yaml") == {
        "gpu-platform:monitoring": {"dashboard": True}
    }
    with pytest.raises(StackFileError, match="gpu-platform:monitoring: the same key as monitoring"):
        parse("config:\n  monitoring: {}\n  gpu-platform:monitoring: {}", "f.yaml")


def test_a_top_level_null_is_handed_over_as_empty_text():
    # workspace/loaders.go checkForEmptyConfig: "currently treated as an empty string"; inside an object, null.
    assert parse("config:\n  gpu-platform:audit:\n  gpu-platform:x: {a: ~}", "f.yaml") == {
        "gpu-platform:audit": "",
        "gpu-platform:x": {"a": None},
    }


def test_merge_keys_merge_and_the_mappings_own_keys_win():
    text = "base: &b {owner: a, approval: X-1}\nconfig:\n  gpu-platform:audit: {<<: *b, approval: X-2}"
    # `base:` is not a stack file key: refused, so the anchor lives in a config value here instead.
    with pytest.raises(StackFileError, match="base: not a key of a Pulumi stack file"):
        parse(text, "f.yaml")
    text = "config:\n  gpu-platform:x: &b {owner: a, approval: X-1}\n  gpu-platform:audit: {<<: *b, approval: X-2}"
    assert parse(text, "f.yaml")["gpu-platform:audit"] == {"owner": "a", "approval": "X-2"}


@pytest.mark.parametrize(
    "text, message",
    [
        ("config:\n  a: 1\n  a: 2", "f.yaml: line 3, column 3: found duplicate key 'a' (first at line 2)"),
        # go-yaml v3.0.1 decode.go:767-776 compares every key of a mapping as written, merge keys too.
        (
            "config:\n  a: &x {b: 1}\n  c: {<<: *x, <<: *x}",
            "f.yaml: line 3, column 15: found duplicate key '<<' (first at line 3)",
        ),
        ("config:\n  approval: 2024-01-01", "f.yaml: gpu-platform:approval: '2024-01-01' is a date or time in YAML"),
        ("config:\n  x:approval: 2024-01-01T10:00:00Z", "f.yaml: x:approval: '2024-01-01T10:00:00Z' is a date or time"),
        ("config:\n  a: !!binary aGVsbG8=", "f.yaml: gpu-platform:a: binary data (!!binary) is not a value"),
        ("config:\n  a: !!set {x, y}", "f.yaml: gpu-platform:a: a set (!!set) is not a value"),
        ("config:\n  a: !!omap [x: 1]", "f.yaml: gpu-platform:a: an ordered map (!!omap or !!pairs) is not a value"),
        ("config:\n  a: !!python/object:os.system x", "f.yaml: line 2, column 6: could not determine a constructor"),
        # Explicit tags: go-yaml resolves the text and refuses another kind (resolve.go:133-152).
        ("config:\n  a: !!bool maybe", "f.yaml: line 2, column 6: cannot decode !!str `maybe` as a !!bool"),
        ("config:\n  a: !!bool yes", "f.yaml: line 2, column 6: cannot decode !!str `yes` as a !!bool"),
        ("config:\n  a: !!int ''", "f.yaml: line 2, column 6: cannot decode !!null `` as a !!int"),
        ("config:\n  a: !!int abc", "f.yaml: line 2, column 6: cannot decode !!str `abc` as a !!int"),
        ("config:\n  a: !!float abc", "f.yaml: line 2, column 6: cannot decode !!str `abc` as a !!float"),
        ("config:\n  a: !!null abc", "f.yaml: line 2, column 6: cannot decode !!str `abc` as a !!null"),
        (
            "config:\n  a: !!timestamp 2024-13-45",
            "f.yaml: line 2, column 6: cannot decode !!str `2024-13-45` as a !!timestamp",
        ),
        ("config:\n  a: !!map [a]", "f.yaml: line 2, column 6: map tag on a value that is not a mapping"),
        ("config:\n  a: b\x00c", "f.yaml: line 2, column 7: the character U+0000 is not allowed in YAML"),
        ("config:\n  42: x", "f.yaml: config: the key 42 is not text; quote it"),
        ("config:\n  ~: x", "f.yaml: config: the key null is not text; quote it"),
        ("config:\n  a: {~: x}", "f.yaml: gpu-platform:a: the key null is not text; quote it"),
        ('config:\n  "a\\e[2J": {b: .inf}', "f.yaml: gpu-platform:a\\u001b[2J.b: inf is not a number"),
        ("config:\n  a: .inf", "f.yaml: gpu-platform:a: inf is not a number"),
        ("config:\n  a: [.nan]", "f.yaml: gpu-platform:a[0]: nan is not a number"),
        ("config:\n  a: {secure: AAABAC==}", "f.yaml: gpu-platform:a: an encrypted secret"),
        ("config:\n  a: {owner: {secure: AAABAC==}}", "f.yaml: gpu-platform:a.owner: an encrypted secret"),
        (
            "config:\n  a: '" + "[" * 40 + "]" * 40 + "'",
            "f.yaml: gpu-platform:a: JSON text nested deeper than 32 levels; no key of a stack file nests that deep",
        ),
        (
            "config:\n  a: '" + "[" * 5000 + "]" * 5000 + "'",
            "f.yaml: gpu-platform:a: JSON text nested deeper than 32 levels",
        ),
        ("environment: [prod-env]\nconfig: {}", "f.yaml: environment: Pulumi ESC environments add config values"),
        ("configs:\n  a: 1", "f.yaml: configs: not a key of a Pulumi stack file (valid: config, "),
        (
            "stack: dev\nresources: []",
            (
                "f.yaml: resources: not a key of a Pulumi stack file (valid: config, secretsprovider, "
                "encryptedkey, encryptionsalt, environment); this looks like a --json report: did you mean --against?"
            ),
        ),
        ("config: [1, 2]", "f.yaml: config: a mapping of namespace:key to value (got [1, 2])"),
        ("- config", "f.yaml: a stack file is a mapping with a 'config:' mapping (got [\"config\"])"),
        ("config: {a: [unclosed", "f.yaml: line 2, column 1: did not find expected ',' or ']'"),
    ],
)
def test_what_pulumi_could_not_read_is_an_error_naming_file_and_key(text, message):
    with pytest.raises(StackFileError) as error:
        parse(text, "f.yaml")
    assert str(error.value).startswith(message)


def _alias_bomb(levels: int) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "config:\n  " + "\n  ".join(lines)


def test_an_alias_bomb_is_refused_at_once_and_small():
    bomb = _alias_bomb(9)  # 9**9 values from about 400 bytes
    started, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(StackFileError, match="expands to more than 100000 values"):
        parse(bomb, "f.yaml")
    assert time.perf_counter() - started < 1.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 1024  # KiB


@pytest.mark.parametrize("depth", [33, 20000, 60000])
def test_deep_nesting_is_refused_before_anything_recursive_builds_it(depth):
    # 25,000 `[` crashed libyaml's composer (a segfault, exit 139) before the depth was checked.
    with pytest.raises(StackFileError, match="nested deeper than 32 levels"):
        parse("config:\n  a: " + "[" * depth + "]" * depth, "f.yaml")


def test_a_file_too_large_is_refused_before_it_is_parsed(tmp_path):
    big = tmp_path / "Pulumi.big.yaml"
    big.write_text("config:\n  a: '" + "x" * MAX_BYTES + "'\n")
    with pytest.raises(StackFileError, match="bytes; a stack file is a few KB"):
        read_stack_file(big)


def test_binary_and_unreadable_files_name_the_file(tmp_path):
    binary = tmp_path / "Pulumi.bin.yaml"
    binary.write_bytes(b"config:\n  a: \xff\xfe\n")
    with pytest.raises(StackFileError, match="not UTF-8 text"):
        read_stack_file(binary)
    unreadable = tmp_path / "Pulumi.dir.yaml"
    unreadable.mkdir()
    with pytest.raises(StackFileError, match="cannot be read"):
        read_stack_file(unreadable)


@pytest.mark.parametrize("stack", ["", "../stacks/Pulumi.dev", ".hidden"])
def test_a_stack_name_that_is_none_is_refused(stack):
    with pytest.raises(FileNotFoundError, match="not a stack name"):
        resolve_stack(stack, None)


def test_the_cli_answers_a_bad_stack_file_with_exit_2_and_no_traceback(tmp_path, capsys):
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text(_alias_bomb(9))
    assert main(["--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}: expands to more than") and "Traceback" not in err


def test_an_empty_stack_name_on_the_command_line_is_not_dev(capsys):
    assert main(["--stack", ""]) == 2
    assert "--stack '': not a stack name" in capsys.readouterr().err
