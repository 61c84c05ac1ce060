"""Safe evaluation of the small formulas tasks write (shapes, scalars, roofline, constraints).

An AST walker over a fixed set of node types, operators and functions: no attribute
access, no subscripts, no calls except the listed functions, no names but the given ones.
"""

from __future__ import annotations

import ast
import math
import operator
from functools import lru_cache
from typing import Any, Mapping

from arena.errors import ArenaException

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}
_CMP = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
FUNCTIONS = {
    "min": min,
    "max": max,
    "abs": abs,
    "ceil": math.ceil,
    "floor": math.floor,
    "sqrt": math.sqrt,
    "log2": math.log2,
    "int": int,
    "float": float,
}
_MAX_POW = 256
_MAX_MAGNITUDE = 2**256  # no shape, scalar or roofline figure comes near this


class FormulaError(ArenaException, ValueError):
    """A formula that does not parse, uses something not allowed, or names an unknown value."""


@lru_cache(maxsize=4096)
def _parse(text: str) -> ast.Expression:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise FormulaError(f"cannot parse formula {text!r}: {exc.msg}") from None
    for node in ast.walk(tree):
        allowed = (
            ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Call,
            ast.Name, ast.Constant, ast.Load, ast.IfExp, ast.And, ast.Or,
        ) + tuple(_BINOPS) + tuple(_UNARY) + tuple(_CMP)
        if not isinstance(node, allowed):
            raise FormulaError(f"formula {text!r} uses {type(node).__name__}, which is not allowed")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
                raise FormulaError(
                    f"formula {text!r} calls something other than {', '.join(sorted(FUNCTIONS))}"
                )
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, bool)):
            raise FormulaError(f"formula {text!r} has a non-numeric constant {node.value!r}")
    return tree


def names_in(text: str) -> set[str]:
    """The variable names a formula refers to (function names excluded)."""
    tree = _parse(str(text))
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - called


def evaluate(text: str | int | float, env: Mapping[str, Any]) -> Any:
    """Value of a formula (or a plain number) with the names in ``env``."""
    if isinstance(text, bool):
        return text
    if isinstance(text, (int, float)):
        return text
    tree = _parse(str(text))
    try:
        return _eval(tree.body, env, str(text))
    except (ValueError, TypeError, OverflowError, ArithmeticError) as exc:
        if isinstance(exc, FormulaError):
            raise
        raise FormulaError(f"formula {text!r}: {type(exc).__name__}: {exc}") from None


def _eval(node: ast.AST, env: Mapping[str, Any], text: str) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise FormulaError(f"formula {text!r} names {node.id!r}, which is not defined here")
        return env[node.id]
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env, text), _eval(node.right, env, text)
        # a large exponent is refused where the power can grow (a base of magnitude at most 1 raised to a
        # positive power cannot: the chance that none of ``rows`` draws hits a given expert, say)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_POW and not (abs(left) <= 1 and right > 0):
            raise FormulaError(f"formula {text!r}: exponent {right} too large")
        try:
            value = _BINOPS[type(node.op)](left, right)
        except ZeroDivisionError:
            raise FormulaError(f"formula {text!r} divides by zero") from None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) > _MAX_MAGNITUDE:
            raise FormulaError(f"formula {text!r}: a value exceeds 2**256")
        return value
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, env, text))
    if isinstance(node, ast.BoolOp):
        values = [_eval(v, env, text) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env, text)
        for op, comp in zip(node.ops, node.comparators):
            right = _eval(comp, env, text)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body if _eval(node.test, env, text) else node.orelse, env, text)
    if isinstance(node, ast.Call):
        fn = FUNCTIONS[node.func.id]  # type: ignore[union-attr]
        return fn(*[_eval(a, env, text) for a in node.args])
    raise FormulaError(f"formula {text!r}: unsupported expression")
