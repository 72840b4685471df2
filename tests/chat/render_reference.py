#!/usr/bin/python3
"""Renders chat-template test cases with jinja2 exactly as Hugging Face transformers does.

Usage: render_reference.py CASES.json RESULTS.json

CASES.json is a list of {"template": str, "context": {...}, "now": unix seconds}. RESULTS.json
receives, per case, {"output": str} or {"error": message, "kind": "syntax" | "raise" | "other"}.

The environment mirrors transformers' _compile_jinja_template: an ImmutableSandboxedEnvironment
with trim_blocks and lstrip_blocks, the loop-controls extension and a {% generation %} block,
raise_exception and strftime_now as globals, and tojson replaced by json.dumps with
ensure_ascii=False. strftime_now reads the case's fixed clock so both renderers see one time.
"""
import datetime
import json
import sys

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.exceptions import TemplateError, TemplateSyntaxError
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationBlock(jinja2.ext.Extension):
    """transformers' {% generation %} tag, rendering its body unchanged."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


class RaisedByTemplate(TemplateError):
    pass


def make_environment(now):
    def raise_exception(message):
        raise RaisedByTemplate(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.datetime.fromtimestamp(now).strftime(format)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


_environments = {}
_templates = {}


def compile_template(source, now):
    """Compiles once per (source, clock): the corpus renders one template many times."""
    if now not in _environments:
        _environments[now] = make_environment(now)
    key = (source, now)
    if key not in _templates:
        _templates[key] = _environments[now].from_string(source)
    return _templates[key]


def render(case):
    try:
        template = compile_template(case["template"], case.get("now", 0))
    except TemplateSyntaxError as e:
        return {"error": str(e), "kind": "syntax", "line": e.lineno}
    except Exception as e:  # unknown filters and tests are compile-time errors too
        return {"error": str(e), "kind": "syntax"}
    try:
        return {"output": template.render(**case["context"])}
    except RaisedByTemplate as e:
        return {"error": str(e), "kind": "raise"}
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}", "kind": "other"}


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    results = [render(case) for case in cases]
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
