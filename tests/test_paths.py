"""Path validation follows Curator's PathUtils.validatePath rule by rule."""

from __future__ import annotations

import pytest

from pycurator._protocol.paths import validate_path


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/a",
        "/a/b/c",
        "/a.b",
        "/..a",
        "/a..",
        "/.a/b.",
        "/zookeeperish",
        "/\u00e9t\u00e9",
        "/a b",
    ],
)
def test_valid_paths_are_returned_unchanged(path: str) -> None:
    assert validate_path(path) == path


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("", "Path length must be > 0"),
        ("a/b", "Path must start with / character"),
        ("/a/", "Path must not end with / character"),
        ("/a//b", "empty node name specified @3"),
        ("/a/./b", "relative paths not allowed @3"),
        ("/a/.", "relative paths not allowed @3"),
        ("/a/../b", "relative paths not allowed @4"),
        ("/..", "relative paths not allowed @2"),
        ("/a\x00b", "null character not allowed @2"),
        ("/a\x01", "invalid character @2"),
        ("/a\x1f", "invalid character @2"),
        ("/a\x7f", "invalid character @2"),
        ("/a\x9f", "invalid character @2"),
        ("/a\ue000", "invalid character @2"),
        ("/a\uf8ff", "invalid character @2"),
        ("/a\ufff0", "invalid character @2"),
        ("/a\uffff", "invalid character @2"),
        # outside the Basic Multilingual Plane: a surrogate pair in Java's UTF-16
        ("/a\U0001f512", "invalid character @2"),
    ],
)
def test_invalid_paths_raise_value_error_naming_the_problem(path: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        validate_path(path)


@pytest.mark.parametrize("ch", ["\x20", "\x7e", "\xa0", "\ud7ff", "\uf900", "\uffef"])
def test_characters_just_outside_the_rejected_ranges_pass(ch: str) -> None:
    assert validate_path("/a" + ch) == "/a" + ch


def test_a_path_that_is_not_a_string_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="path must be a str"):
        validate_path(b"/a")  # type: ignore[arg-type]
