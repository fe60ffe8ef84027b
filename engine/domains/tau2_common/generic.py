"""The two tools airline and retail share: ``calculate`` and ``transfer_to_human_agents``.

Both mirror tau2 17e07b1 (identical in the two toolkits) and write nothing.
"""

from __future__ import annotations

import ast
import operator
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from engine.core.tools.context import CallContext
from engine.domains.tau2_common.results import fail, ok

_ALLOWED_CHARACTERS = frozenset("0123456789+-*/(). ")
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
#: An integer power whose exponent exceeds this is refused (its result could not become a float
#: anyway, and computing it could take minutes); tau2 would try.
MAX_INT_EXPONENT = 100_000


def _value(node: ast.AST) -> Any:
    """Evaluate the arithmetic tree that the allowed characters can spell, with Python's own
    operators (so results and exception texts are Python's)."""
    if isinstance(node, ast.Expression):
        return _value(node.body)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left), _value(node.right)
        huge_power = isinstance(node.op, ast.Pow) and isinstance(right, int) and right > MAX_INT_EXPONENT
        if huge_power and isinstance(left, int) and abs(left) > 1:
            raise OverflowError("int too large to convert to float")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_value(node.operand))
    if isinstance(node, ast.Tuple):
        return tuple(_value(e) for e in node.elts)
    if isinstance(node, ast.Call):
        func = _value(node.func)
        raise TypeError(f"'{type(func).__name__}' object is not callable")
    raise TypeError(f"unsupported expression: {type(node).__name__}")


def evaluate(expression: str) -> str:
    """tau2's ``calculate`` text: ``str(round(float(result), 2))``.

    Python's ``eval`` of a string skips leading spaces and tabs and compiles it as an expression;
    this compiles the same way (so a syntax error has the same text), then evaluates the tree
    without ``eval``. Raises what Python raises (SyntaxError, ZeroDivisionError, TypeError,
    OverflowError).
    """
    source = expression.lstrip(" \t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile(source, "<string>", "eval")
    tree = ast.parse(source, "<string>", mode="eval")
    return str(round(float(_value(tree)), 2))


def calculate(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """Evaluate ``expression`` (digits, ``+ - * / ( ) .`` and spaces); content e.g. ``"1200.0"``.

    Errors (``invalid_argument``): ``Invalid characters in expression``; otherwise Python's own
    message for a bad expression (``invalid syntax (<string>, line 1)``, ``division by zero``).
    Read-only. Mirrors tau2 17e07b1 ``calculate``.
    """
    expression = args["expression"]
    if not all(ch in _ALLOWED_CHARACTERS for ch in expression):
        return fail("invalid_argument", "Invalid characters in expression")
    try:
        return ok(evaluate(expression))
    except (SyntaxError, ArithmeticError, TypeError, ValueError) as exc:
        return fail("invalid_argument", str(exc))


def transfer_to_human_agents(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """Hand the user to a human; content ``"Transfer successful"``. ``summary`` is not used.

    Never fails; writes nothing. The call ends after it: the tool table must declare it as
    ending the session (stop reason ``transfer``). Mirrors tau2 17e07b1 ``transfer_to_human_agents``.
    """
    return ok("Transfer successful")
