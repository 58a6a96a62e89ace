"""The tree-sitter-bash parser, loaded on first use straight from its extension module."""

from __future__ import annotations

import os
from _thread import allocate_lock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = ["bash_parser", "parse"]

_parser: Parser | None = None
_lock = allocate_lock()  # a tree-sitter parser parses one text at a time


def parse(source: bytes) -> Node:
    """The root node of `source` parsed as bash."""
    with _lock:
        return bash_parser().parse(source).root_node


def bash_parser() -> Parser:
    """The tree-sitter parser of bash, made once (on first use: loading it costs)."""
    global _parser
    if _parser is None:
        from tree_sitter import Language, Parser

        _parser = Parser(Language(_bash_language()))
    return _parser


def _bash_language() -> object:
    """The tree-sitter-bash grammar, loaded from its extension module directly.

    `import tree_sitter_bash` also imports importlib.resources (for its highlight queries),
    which costs more than everything else a gated command loads; the grammar does not need it.
    """
    import importlib.machinery
    import importlib.util

    try:
        spec = importlib.util.find_spec("tree_sitter_bash")
        folders = list(spec.submodule_search_locations or ()) if spec else []
        for folder in folders:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = os.path.join(folder, "_binding" + suffix)
                if os.path.isfile(path):
                    name = "tree_sitter_bash._binding"
                    loader = importlib.machinery.ExtensionFileLoader(name, path)
                    binding = importlib.util.spec_from_file_location(name, path, loader=loader)
                    if binding is not None:
                        module = importlib.util.module_from_spec(binding)
                        loader.exec_module(module)
                        return module.language()
    except (ImportError, OSError, AttributeError):
        pass
    import tree_sitter_bash

    return tree_sitter_bash.language()
