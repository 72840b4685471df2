"""The type stubs (_kestrel.pyi) declare exactly what the extension has: every public name,
every class member, and each function's parameters in order."""

import ast
import inspect
import os
import unittest

import kestrel
from kestrel import _kestrel

STUB = os.path.join(os.path.dirname(_kestrel.__file__), "_kestrel.pyi")


def stub_tree():
    with open(STUB) as f:
        return ast.parse(f.read())


def parameters(function):
    args = function.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    return [n for n in names if n != "self"]


def split_top_level(text):
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "[(" and 1 or (char in "])" and -1 or 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current)
    return parts


def runtime_parameters(function):
    """Parameter names from the signature line pybind11 writes at the top of __doc__."""
    line = function.__doc__.splitlines()[0]
    inside = line[line.index("(") + 1: line.rindex(")")]
    names = [part.split(":")[0].strip() for part in split_top_level(inside)]
    return [n for n in names if n not in ("self", "*", "")]


def public(names):
    return {n for n in names if not n.startswith("_") or n in ("__version__", "__init__", "__next__", "__iter__",
                                                                "__enter__", "__exit__")}


class StubTest(unittest.TestCase):
    def setUp(self):
        tree = stub_tree()
        self.functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.variables = {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)}

    def test_every_public_name_is_declared(self):
        runtime = public(dir(_kestrel)) - {"__version__"}
        declared = set(self.functions) | set(self.classes)
        self.assertEqual(runtime, declared)
        self.assertIn("__version__", self.variables)

    def test_class_members(self):
        for name, node in self.classes.items():
            cls = getattr(_kestrel, name)
            if issubclass(cls, BaseException):
                continue
            with self.subTest(cls=name):
                declared = set()
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        declared.add(item.name)
                    elif isinstance(item, ast.AnnAssign):
                        declared.add(item.target.id)
                own = {member for klass in cls.__mro__ if klass.__module__.startswith("kestrel")
                       for member in vars(klass)}
                self.assertEqual(public(own) - {"__init__"}, public(declared) - {"__init__"})

    def test_function_parameters(self):
        for name, node in self.functions.items():
            with self.subTest(function=name):
                self.assertEqual(runtime_parameters(getattr(_kestrel, name)), parameters(node))
        for class_name, class_node in self.classes.items():
            for item in class_node.body:
                if not isinstance(item, ast.FunctionDef) or item.decorator_list or item.name.startswith("__"):
                    continue
                with self.subTest(method=f"{class_name}.{item.name}"):
                    member = getattr(getattr(_kestrel, class_name), item.name)
                    self.assertEqual(runtime_parameters(member), parameters(item))
        for class_name in ("Program", "Runner", "GenerationConfig"):
            init = next(i for i in self.classes[class_name].body if isinstance(i, ast.FunctionDef) and i.name == "__init__")
            with self.subTest(init=class_name):
                self.assertEqual(runtime_parameters(getattr(_kestrel, class_name).__init__), parameters(init))

    def test_package_exports(self):
        for name in kestrel.__all__:
            self.assertTrue(hasattr(kestrel, name), name)
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(kestrel.__file__), "py.typed")))
        signature = inspect.signature(kestrel.Runner.generate)
        self.assertEqual(list(signature.parameters)[:3], ["self", "prompt", "max_new_tokens"])


if __name__ == "__main__":
    unittest.main()
