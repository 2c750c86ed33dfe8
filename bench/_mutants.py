"""How bench/mutation.py makes its mutants and swaps one in: the mutation operators over a module's AST, and the
function object whose code a mutant replaces.

Only function bodies are mutated (not default arguments, annotations, decorators or module-level constants), so a
mutant is one function's new code object, found by its qualified name in the mutated module's compiled code.
"""

from __future__ import annotations

import ast
import copy
import fnmatch
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

_CMP: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Lt: (ast.LtE, ast.GtE),
    ast.LtE: (ast.Lt, ast.Gt),
    ast.Gt: (ast.GtE, ast.LtE),
    ast.GtE: (ast.Gt, ast.Lt),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
    ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
}
_ARITH: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
}
_SYMBOL = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is",
    ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in", ast.Add: "+", ast.Sub: "-", ast.Mult: "*",
    ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
}  # fmt: skip


@dataclass(frozen=True)
class Mutant:
    module: str  # path in the repository, e.g. engine/retrieval/stages.py
    qualname: str  # the module-level function or method whose code changes
    index: int  # the node's position in ast.walk order of the module
    op: str  # what to do to it (see _apply)
    line: int
    desc: str
    source: str  # the line, stripped

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.module, self.qualname, self.source, self.desc


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Module-level functions and methods of module-level classes, by qualified name."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield f"{node.name}.{item.name}", item


def _body_nodes(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[int]:
    """Ids of the nodes of a function's body, without annotations (of nested functions too)."""
    skip: set[int] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.arg) and node.annotation is not None:
            skip.update(id(n) for n in ast.walk(node.annotation))
        elif isinstance(node, ast.AnnAssign):
            skip.update(id(n) for n in ast.walk(node.annotation))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            skip.update(id(n) for n in ast.walk(node.returns))
    return {id(n) for stmt in fn.body for n in ast.walk(stmt)} - skip


def _ops(node: ast.AST) -> Iterator[tuple[str, str]]:
    """(op, description) of each mutation of one node."""
    if isinstance(node, ast.Compare):
        for k, cmp in enumerate(node.ops):
            for other in _CMP.get(type(cmp), ()):
                yield f"cmp:{k}:{other.__name__}", f"`{_SYMBOL[type(cmp)]}` -> `{_SYMBOL[other]}`"
    elif isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in _ARITH:
        new_op = _ARITH[type(node.op)]
        yield f"arith:{new_op.__name__}", f"`{_SYMBOL[type(node.op)]}` -> `{_SYMBOL[new_op]}`"
    elif isinstance(node, ast.BoolOp):
        yield "boolop", "`and` -> `or`" if isinstance(node.op, ast.And) else "`or` -> `and`"
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
        yield "unwrap", "`not` removed" if isinstance(node.op, ast.Not) else "unary `-` removed"
    elif isinstance(node, ast.If | ast.While | ast.IfExp):
        yield "negate", "condition negated"
    elif isinstance(node, ast.comprehension):
        for k in range(len(node.ifs)):
            yield f"negate_if:{k}", "comprehension condition negated"
    elif isinstance(node, ast.Return) and node.value is not None:
        if not (isinstance(node.value, ast.Constant) and node.value.value is None):
            yield "return_none", "`return x` -> `return None`"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
        yield "minmax", f"`{node.func.id}` -> `{'max' if node.func.id == 'min' else 'min'}`"
    elif isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        yield "const", f"`{node.value!r}` -> `{_changed(node.value)!r}`"
    elif isinstance(node, ast.Continue | ast.Break):
        yield "drop", f"`{'continue' if isinstance(node, ast.Continue) else 'break'}` dropped"


def _changed(value: int | float) -> int | float:
    """A number's mutant: True <-> False, 0 <-> 1, otherwise one more (of the same type)."""
    if isinstance(value, bool):
        return not value
    return type(value)(1 if value == 0 else 0 if value == 1 else value + 1)


def make_mutants(module: str, source: str, functions: Sequence[str] = ()) -> list[Mutant]:
    tree = ast.parse(source)
    lines = source.splitlines()
    owner: dict[int, str] = {}
    for qualname, fn in _functions(tree):
        if not functions or any(fnmatch.fnmatch(qualname, p) for p in functions):
            owner.update(dict.fromkeys(_body_nodes(fn), qualname))
    out = []
    for index, node in enumerate(ast.walk(tree)):
        if id(node) not in owner:
            continue
        line = getattr(node, "lineno", 0) or getattr(getattr(node, "target", None), "lineno", 0)
        if isinstance(node, ast.comprehension):
            line = node.target.lineno
        for op, desc in _ops(node):
            out.append(Mutant(module, owner[id(node)], index, op, line, desc, lines[line - 1].strip()))
    return out


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list) and any(v is old for v in value):
                value[[v is old for v in value].index(True)] = new
                return


def _apply(tree: ast.Module, m: Mutant) -> None:
    node = list(ast.walk(tree))[m.index]
    kind, _, arg = m.op.partition(":")
    if kind == "cmp":
        k, name = arg.split(":")
        assert isinstance(node, ast.Compare)
        node.ops[int(k)] = getattr(ast, name)()
    elif kind == "arith":
        assert isinstance(node, ast.BinOp | ast.AugAssign)
        node.op = getattr(ast, arg)()
    elif kind == "boolop":
        assert isinstance(node, ast.BoolOp)
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif kind == "unwrap":
        assert isinstance(node, ast.UnaryOp)
        _replace(tree, node, node.operand)
    elif kind == "negate":
        assert isinstance(node, ast.If | ast.While | ast.IfExp)
        node.test = ast.UnaryOp(ast.Not(), node.test)
    elif kind == "negate_if":
        assert isinstance(node, ast.comprehension)
        node.ifs[int(arg)] = ast.UnaryOp(ast.Not(), node.ifs[int(arg)])
    elif kind == "return_none":
        assert isinstance(node, ast.Return)
        node.value = ast.Constant(None)
    elif kind == "minmax":
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        node.func.id = "max" if node.func.id == "min" else "min"
    elif kind == "const":
        assert isinstance(node, ast.Constant) and isinstance(node.value, int | float)
        node.value = _changed(node.value)
    elif kind == "drop":
        _replace(tree, node, ast.Pass())
    ast.fix_missing_locations(tree)


def _find_code(code: types.CodeType, qualname: str) -> types.CodeType | None:
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_qualname == qualname:
                return const
            found = _find_code(const, qualname)
            if found is not None:
                return found
    return None


def mutant_code(tree: ast.Module, filename: str, m: Mutant) -> types.CodeType:
    mutated = copy.deepcopy(tree)
    _apply(mutated, m)
    code = _find_code(compile(mutated, filename, "exec", dont_inherit=True), m.qualname)
    if code is None:
        raise LookupError(f"no code for {m.qualname}")
    return code


def live_function(module: types.ModuleType, qualname: str) -> types.FunctionType:
    """The function object the module's code runs for ``qualname`` (a property's getter, a classmethod's function)."""
    obj: object = module
    for part in qualname.split("."):
        obj = vars(obj)[part]
    if isinstance(obj, property):
        obj = obj.fget
    if isinstance(obj, staticmethod | classmethod):
        obj = obj.__func__
    while hasattr(obj, "__wrapped__"):
        obj = obj.__wrapped__
    if not isinstance(obj, types.FunctionType):
        raise LookupError(f"{qualname} is not a function")
    return obj
