"""Names that are Python keywords, in the spec's expressions.

C and CUDA kernels name their parameters `in`, `from` or `lambda`, and the
spec's names are the kernel's; Python's parser, which reads expressions
(expr.py), takes those words for its own. When an expression does not parse,
the keywords the grammar has no use for (all but `and`, `or`, `not` and the
constants) are read as names and parsed again, so `in.T` or `from * 2` mean
the parameter. The expression language has no `in`, `if` or `lambda` of its
own, so nothing it could mean is lost.
"""
from __future__ import annotations

import ast
import keyword
import re

_GRAMMAR_WORDS = {"and", "or", "not", "True", "False", "None"}
_NAME_KEYWORDS = sorted(set(keyword.kwlist) - _GRAMMAR_WORDS)
# a keyword as a whole word, outside a string literal ('in' stays text)
_KEYWORD = re.compile(r"""('[^']*'|"[^"]*")|(?<![\w.])(%s)(?!\w)""" % "|".join(_NAME_KEYWORDS))
_STAND_IN = "_cubinrun_keyword_{}_"


def parse_expression(source: str) -> ast.Expression:
    """`source` parsed as an expression, a keyword used as a name read as that
    name; the parser's own SyntaxError when it does not parse either way."""
    try:
        return ast.parse(source, mode="eval")
    except SyntaxError as first:
        rewritten = _KEYWORD.sub(lambda m: m.group(1) or _STAND_IN.format(m.group(2)), source)
        if rewritten == source:
            raise
        try:
            tree = ast.parse(rewritten, mode="eval")
        except SyntaxError:
            raise first from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id.startswith("_cubinrun_keyword_"):
            node.id = node.id.removeprefix("_cubinrun_keyword_").removesuffix("_")
    return tree
