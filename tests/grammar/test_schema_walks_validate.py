#!/usr/bin/env python3
"""The schema grammar against an independent validator: for realistic JSON Schemas (the kinds
people send as response_format or tool parameters), grammar_walk samples random outputs by walking
the grammar byte by byte, and every one must parse with Python's json module and validate with the
jsonschema package (Draft 2020-12). The other way round, instances Python writes (compact, with
one space, indented, ASCII-escaped) must be accepted to the end, and invalid ones refused.

Usage: test_schema_walks_validate.py --walk PATH [--samples N]
Exit status: 0 all passed, 1 any failure, 77 when jsonschema is not installed.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import Checks  # noqa: E402

CHECKS = Checks("schema_grammar")
expect = CHECKS.expect

ADDRESS = {
    "type": "object",
    "properties": {
        "street": {"type": "string"},
        "city": {"type": "string", "minLength": 1},
        "zip": {"type": "string", "minLength": 5, "maxLength": 10},
        "country": {"enum": ["BR", "PT", "US"]},
    },
    "required": ["city", "country"],
    "additionalProperties": False,
}

# (name, schema, valid instances, invalid texts)
SCHEMAS = [
    ("person with nested address", {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "full name"},
            "age": {"type": "integer"},
            "address": ADDRESS,
        },
        "required": ["name", "age", "address"],
        "additionalProperties": False,
    }, [{"name": "Ana Maria", "age": 42, "address": {"city": "Lisboa", "zip": "1000-001", "country": "PT"}}],
        ['{"name":"A","age":1}', '{"name":"A","age":1.5,"address":{"city":"x","country":"BR"}}',
         '{"name":"A","age":1,"address":{"city":"","country":"BR"}}']),
    ("enum and const fields", {
        "type": "object",
        "properties": {
            "kind": {"const": "event"},
            "level": {"type": "string", "enum": ["debug", "info", "warn", "error"]},
            "code": {"enum": [200, 404, 500, None, True]},
        },
        "required": ["kind", "level", "code"],
    }, [{"kind": "event", "level": "warn", "code": None}, {"kind": "event", "level": "debug", "code": 404}],
        ['{"kind":"events","level":"warn","code":200}', '{"kind":"event","level":"fatal","code":200}']),
    ("array with minItems and maxItems", {
        "type": "array", "items": {"type": "string", "maxLength": 8}, "minItems": 1, "maxItems": 4,
    }, [["a"], ["a", "bb", "ccc", "dddd"], ["ünïcødé", "日本語"]], ['[]', '["a","b","c","d","e"]', '["123456789"]']),
    ("anyOf of scalar types", {
        "anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}],
    }, ["x", 3, None], ['1.5', 'true', '[]']),
    ("recursive tree through $defs", {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 3},
                },
                "required": ["name"],
                "additionalProperties": False,
            }
        },
        "$ref": "#/$defs/node",
    }, [{"name": "root", "children": [{"name": "a"}, {"name": "b", "children": [{"name": "c", "children": []}]}]}],
        ['{"name":"r","children":[{"children":[]}]}', '{"name":"r","children":[{"name":"a"},{"name":"b"},'
         '{"name":"c"},{"name":"d"}]}']),
    ("integer versus number", {
        "type": "object",
        "properties": {"count": {"type": "integer"}, "ratio": {"type": "number"}},
        "required": ["count", "ratio"],
    }, [{"count": -7, "ratio": 0.25}, {"count": 0, "ratio": 1e-9}, {"count": 10, "ratio": 3}],
        ['{"count":1.0,"ratio":1}', '{"count":1,"ratio":.5}', '{"count":01,"ratio":1}']),
    ("optional fields", {
        "type": "object",
        "properties": {
            "a": {"type": "boolean"}, "b": {"type": "string"}, "c": {"type": "null"}, "d": {"type": "integer"},
        },
        "required": ["c"],
    }, [{"c": None}, {"a": True, "c": None}, {"b": "x", "c": None, "d": 1}, {"a": False, "b": "", "c": None, "d": 2}],
        ['{}', '{"a":true}', '{"c":null,"a":true}', '{"c":null,}']),
    ("nested arrays of objects", {
        "type": "object",
        "properties": {
            "orders": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "integer"},
                        "lines": {"type": "array", "items": {
                            "type": "object",
                            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"},
                                           "price": {"type": "number"}},
                            "required": ["sku", "qty"]}},
                    },
                    "required": ["id", "lines"],
                },
            }
        },
        "required": ["orders"],
    }, [{"orders": [{"id": 1, "lines": [{"sku": "X-1", "qty": 2, "price": 9.99}, {"sku": "Y", "qty": 1}]},
                    {"id": 2, "lines": []}]}], ['{"orders":[{"id":1}]}', '{"orders":[{"id":1,"lines":[{"qty":1}]}]}']),
    ("json_object mode", {"type": "object"},
     [{}, {"a": [1, 2, {"b": None}], "c": "d"}, {"x": {"y": {"z": [True, False, -1.5e10]}}}],
     ['[]', '"x"', '{"a":}', '{"a" 1}']),
    ("any value", {}, [1, "s", None, [{}], {"k": [1, "2"]}], ['{', 'nulll', '01', "'x'"]),
    ("tool call arguments (OpenAI strict)", {
        "type": "object",
        "properties": {
            "location": {"type": "string", "description": "City and country e.g. Bogotá, Colombia"},
            "units": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit", None]},
        },
        "required": ["location", "units"],
        "additionalProperties": False,
    }, [{"location": "Paris, France", "units": None}, {"location": "Bogotá", "units": "celsius"}],
        ['{"location":"x","units":"kelvin"}', '{"location":"x"}']),
    ("pydantic optional with anyOf and defaults", {
        "title": "Item",
        "type": "object",
        "properties": {
            "name": {"title": "Name", "type": "string"},
            "price": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None, "title": "Price"},
            "tags": {"title": "Tags", "type": "array", "items": {"type": "string"}, "default": []},
        },
        "required": ["name"],
    }, [{"name": "pen"}, {"name": "pen", "price": 1.5, "tags": ["office", "blue"]}, {"name": "x", "price": None}],
        ['{"price":1}', '{"name":"pen","price":"1"}']),
    ("pydantic nested model by $ref", {
        "$defs": {
            "Pet": {"properties": {"kind": {"enum": ["cat", "dog"], "title": "Kind", "type": "string"},
                                   "age": {"title": "Age", "type": "integer"}},
                    "required": ["kind", "age"], "title": "Pet", "type": "object"},
        },
        "properties": {"owner": {"title": "Owner", "type": "string"},
                       "pets": {"items": {"$ref": "#/$defs/Pet"}, "title": "Pets", "type": "array"}},
        "required": ["owner", "pets"],
        "title": "Household",
        "type": "object",
    }, [{"owner": "Bo", "pets": [{"kind": "cat", "age": 3}]}, {"owner": "Al", "pets": []}],
        ['{"owner":"Bo","pets":[{"kind":"cow","age":3}]}']),
    ("tuple with prefixItems", {
        "type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}, {"enum": ["m", "km"]}],
        "items": False, "minItems": 2,
    }, [[1, 2], [1.5, -2, "km"]], ['[1]', '[1,2,"mi"]', '[1,2,"m",4]']),
    ("tuple with prefixItems and more items", {
        "type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"},
    }, [[], ["h"], ["h", 1, 2, 3]], ['[1]', '["h","i"]']),
    ("string lengths with unicode and escapes", {
        "type": "object",
        "properties": {"code": {"type": "string", "minLength": 3, "maxLength": 3},
                       "note": {"type": "string", "maxLength": 5}},
        "required": ["code"],
    }, [{"code": "abc"}, {"code": "日本語", "note": "😀😀"}, {"code": "a\nb", "note": "\"\\"}],
        ['{"code":"ab"}', '{"code":"abcd"}', '{"code":"abc","note":"123456"}']),
    ("additionalProperties with a schema", {
        "type": "object",
        "properties": {"id": {"type": "string"}},
        "required": ["id"],
        "additionalProperties": {"type": "integer"},
    }, [{"id": "x"}, {"id": "x", "count": 3, "idx": 4}], ['{"id":"x","n":"s"}', '{"id":"x","id":1}']),
    ("map of string to object", {
        "type": "object",
        "additionalProperties": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
    }, [{}, {"a": {"ok": True}, "b b": {"ok": False}}], ['{"a":{}}', '{"a":true}']),
    ("boolean and null types", {
        "type": "object",
        "properties": {"flag": {"type": "boolean"}, "nothing": {"type": "null"}},
        "required": ["flag", "nothing"],
    }, [{"flag": True, "nothing": None}], ['{"flag":1,"nothing":null}', '{"flag":true,"nothing":false}']),
    ("linked list by $ref to the root", {
        "type": "object",
        "properties": {"value": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
        "required": ["value", "next"],
        "additionalProperties": False,
    }, [{"value": 1, "next": {"value": 2, "next": None}}], ['{"value":1,"next":{"value":2}}']),
    ("definitions (draft 7) and allOf of one", {
        "definitions": {"color": {"type": "string", "enum": ["red", "green", "blue"]}},
        "type": "object",
        "properties": {"fg": {"allOf": [{"$ref": "#/definitions/color"}], "description": "text"},
                       "bg": {"$ref": "#/definitions/color"}},
        "required": ["fg"],
    }, [{"fg": "red"}, {"fg": "blue", "bg": "green"}], ['{"fg":"pink"}']),
    ("type list with object and array", {
        "type": ["object", "array", "string"],
        "properties": {"k": {"type": "integer"}},
        "items": {"type": "boolean"},
        "maxLength": 2,
    }, [{"k": 1}, {}, [True, False], "ab"], ['{"k":"1"}', '[1]', '"abc"']),
    ("search query with filters", {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1},
            "filters": {"type": "array", "items": {
                "type": "object",
                "properties": {"field": {"enum": ["author", "year", "title"]},
                               "op": {"enum": ["=", "<", ">", "contains"]},
                               "value": {"type": ["string", "number"]}},
                "required": ["field", "op", "value"], "additionalProperties": False}, "maxItems": 5},
            "limit": {"type": "integer"},
        },
        "required": ["query"],
        "additionalProperties": False,
    }, [{"query": "rust", "filters": [{"field": "year", "op": ">", "value": 2020}], "limit": 10}],
        ['{"query":""}', '{"query":"q","filters":[{"field":"year","op":"~","value":1}]}']),
]


# Valid by jsonschema, refused by the grammar by design: an integer written with a fraction, and
# members out of the schema's order.
STRICTER = {'{"count":1.0,"ratio":1}', '{"c":null,"a":true}'}


def records(texts):
    out = bytearray()
    for t in texts:
        b = t.encode("utf-8") if isinstance(t, str) else t
        out += b"%d\n" % len(b) + b + b"\n"
    return bytes(out)


def parse_records(data):
    out, i = [], 0
    while i < len(data):
        nl = data.index(b"\n", i)
        n = int(data[i:nl])
        if n < 0:
            out.append(None)
            i = nl + 2
            continue
        out.append(data[nl + 1:nl + 1 + n])
        i = nl + 1 + n + 1
    return out


def spellings(value):
    """The ways Python writes an instance that the grammar's whitespace rule allows."""
    return [json.dumps(value, separators=(",", ":"), ensure_ascii=False),
            json.dumps(value, ensure_ascii=False),
            json.dumps(value, indent=2, ensure_ascii=False),
            json.dumps(value, indent="\t", ensure_ascii=True)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--walk", required=True)
    ap.add_argument("--samples", type=int, default=200)
    a = ap.parse_args()
    try:
        import jsonschema
    except ImportError:
        print("skip: the jsonschema package is not installed")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        for k, (name, schema, valid, invalid) in enumerate(SCHEMAS):
            jsonschema.Draft202012Validator.check_schema(schema)
            validator = jsonschema.Draft202012Validator(schema)
            for v in valid:  # the test's own instances must be right first
                expect(f"{name}: instance valid by jsonschema", validator.is_valid(v), json.dumps(v))
            path = os.path.join(tmp, f"s{k}.json")
            with open(path, "w") as f:
                json.dump(schema, f)
            p = subprocess.run([a.walk, "walk", path, str(a.samples), str(k + 1)], capture_output=True)
            if not expect(f"{name}: walk runs", p.returncode == 0, p.stdout.decode(errors="replace") + p.stderr.decode()):
                continue
            outputs = parse_records(p.stdout)
            expect(f"{name}: walk gives every sample", len(outputs) == a.samples, f"{len(outputs)} of {a.samples}")
            unfinished = sum(o is None for o in outputs)
            expect(f"{name}: every walk finishes", unfinished == 0, f"{unfinished} did not")
            bad = []
            for o in outputs:
                if o is None:
                    continue
                try:
                    value = json.loads(o.decode("utf-8"))
                except (ValueError, UnicodeDecodeError) as e:
                    bad.append(f"{o!r}: {e}")
                    continue
                errors = list(validator.iter_errors(value))
                if errors:
                    bad.append(f"{o!r}: {errors[0].message}")
            expect(f"{name}: walked outputs are JSON that validates", not bad, "\n  ".join(bad[:5]))
            distinct = len({o for o in outputs if o is not None})
            expect(f"{name}: walks differ", distinct > 1 or len(valid) == 0, f"{distinct} distinct")

            texts = [s for v in valid for s in spellings(v)]
            p = subprocess.run([a.walk, "check", path], input=records(texts), capture_output=True)
            got = p.stdout.decode().split()
            refused = [t for t, g in zip(texts, got) if g != "1"]
            expect(f"{name}: Python's instances accepted", p.returncode == 0 and len(got) == len(texts) and not refused,
                   repr(refused[:3]))
            for t in invalid:  # these must be wrong by jsonschema too (or not JSON at all)
                if t in STRICTER:
                    continue
                try:
                    wrong = not validator.is_valid(json.loads(t))
                except ValueError:
                    wrong = True
                expect(f"{name}: invalid text is invalid", wrong, t)
            p = subprocess.run([a.walk, "check", path], input=records(invalid), capture_output=True)
            got = p.stdout.decode().split()
            taken = [t for t, g in zip(invalid, got) if g != "0"]
            expect(f"{name}: invalid texts refused", len(got) == len(invalid) and not taken, repr(taken))

        # unsupported keywords are refused, naming the keyword and where
        for schema, needle in [
            ({"type": "object", "properties": {"x": {"type": "string", "pattern": "^a+$"}}},
             "schema at /properties/x: 'pattern' is not supported"),
            ({"type": "object", "patternProperties": {"^x": {}}}, "'patternProperties' is not supported"),
            ({"type": "number", "multipleOf": 3}, "'multipleOf' is not supported"),
        ]:
            path = os.path.join(tmp, "bad.json")
            with open(path, "w") as f:
                json.dump(schema, f)
            p = subprocess.run([a.walk, "compile", path], capture_output=True, text=True)
            expect(f"refused: {needle}", p.returncode == 1 and needle in p.stdout, p.stdout)
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
