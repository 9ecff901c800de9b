#!/usr/bin/env python3
"""openapi_check.py: docs/openapi.yaml against the responses the daemon
really sent (the files clsolved writes under $CLSOLVE_RECORD_RESPONSES,
net/record.h), with a small validator of the OpenAPI 3.0 schema subset
the document uses (type, nullable, enum, required, properties,
additionalProperties, items, minItems, maxItems, minimum, maximum,
exclusiveMinimum/Maximum, pattern, format date-time, allOf, oneOf, anyOf,
$ref). Every recorded response must:

  * match a path of the document (an unknown path: 404 problem+json), and a
    method of it (else 405 with an Allow header);
  * have its status among the operation's responses (or `default`);
  * have a Content-Type the response lists (none when it lists none), and
    every header the response marks required;
  * have a JSON body that satisfies the schema.

  openapi_check.py check SPEC RECORDS...    -> exit 1 and one line per violation
  openapi_check.py lint SPEC                -> every operation has a unique
                                               operationId, every $ref resolves
  openapi_check.py coverage SPEC RECORDS... -> the operations no record reached

Needs PyYAML (Debian's python3-yaml).
"""
import json
import re
import sys

import yaml

METHODS = ("get", "put", "post", "delete", "head", "patch", "options")
DATE_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


class Spec:
    def __init__(self, path):
        self.doc = yaml.safe_load(open(path, encoding="utf-8"))
        self.paths = []
        for p, item in self.doc["paths"].items():
            rx = "^" + re.sub(r"\\\{([^}]+)\\\}", r"(?P<\1>[^/]+)", re.escape(p)) + "$"
            self.paths.append((re.compile(rx), p, item))
        # literal paths before templates: /metrics is not /{asset}
        self.paths.sort(key=lambda t: t[1].count("{"))

    def ref(self, r):
        node = self.doc
        for part in r.lstrip("#/").split("/"):
            node = node[part]
        return node

    def deref(self, node):
        while isinstance(node, dict) and "$ref" in node:
            node = self.ref(node["$ref"])
        return node

    def match(self, path):
        """The path item whose template matches, its path parameters
        satisfying their patterns."""
        for rx, p, item in self.paths:
            m = rx.match(path)
            if not m:
                continue
            params = [self.deref(x) for x in item.get("parameters", [])]
            pats = {x["name"]: self.deref(x.get("schema", {})).get("pattern")
                    for x in params if x.get("in") == "path"}
            if all(not pats.get(k) or re.search(pats[k], v) for k, v in m.groupdict().items()):
                return p, item
        return None, None


def validate(spec, schema, v, where, out):
    schema = spec.deref(schema)
    if not isinstance(schema, dict):
        return
    if v is None:
        if not schema.get("nullable") and "type" in schema:
            out.append("%s: null, but the schema is not nullable" % where)
        return
    for sub in schema.get("allOf", []):
        validate(spec, sub, v, where, out)
    for key in ("oneOf", "anyOf"):
        if key in schema:
            ok = 0
            for sub in schema[key]:
                e = []
                validate(spec, sub, v, where, e)
                ok += not e
            if ok == 0 or (key == "oneOf" and ok > 1):
                out.append("%s: %d of the %s alternatives match" % (where, ok, key))
    t = schema.get("type")
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool}
    if t == "integer":
        if isinstance(v, bool) or not isinstance(v, int):
            out.append("%s: %r is not an integer" % (where, v))
            return
    elif t == "number":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            out.append("%s: %r is not a number" % (where, v))
            return
    elif t in kinds and not isinstance(v, kinds[t]):
        out.append("%s: %s is not %s" % (where, type(v).__name__, t))
        return
    if "enum" in schema and v not in schema["enum"]:
        out.append("%s: %r is not one of %s" % (where, v, schema["enum"]))
    if isinstance(v, str):
        if "pattern" in schema and not re.search(schema["pattern"], v):
            out.append("%s: %r does not match %s" % (where, v, schema["pattern"]))
        if schema.get("format") == "date-time" and not DATE_TIME.match(v):
            out.append("%s: %r is not a date-time" % (where, v))
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if lo is not None and (v < lo or (schema.get("exclusiveMinimum") and v == lo)):
            out.append("%s: %r is below %r" % (where, v, lo))
        if hi is not None and (v > hi or (schema.get("exclusiveMaximum") and v == hi)):
            out.append("%s: %r is above %r" % (where, v, hi))
    if isinstance(v, list):
        if len(v) < schema.get("minItems", 0) or len(v) > schema.get("maxItems", len(v)):
            out.append("%s: %d items" % (where, len(v)))
        if "items" in schema:
            for i, x in enumerate(v[:2000]):
                validate(spec, schema["items"], x, "%s[%d]" % (where, i), out)
    if isinstance(v, dict):
        props = schema.get("properties", {})
        for k in schema.get("required", []):
            if k not in v:
                out.append("%s: '%s' is required" % (where, k))
        extra = schema.get("additionalProperties", True)
        for k, x in v.items():
            if k in props:
                validate(spec, props[k], x, "%s.%s" % (where, k), out)
            elif extra is False:
                out.append("%s: '%s' is not in the schema" % (where, k))
            elif isinstance(extra, dict):
                validate(spec, extra, x, "%s.%s" % (where, k), out)


def check_record(spec, rec):
    out = []
    path, method, status = rec["path"], rec["method"].lower(), rec["status"]
    hdrs = rec.get("headers", {})
    ctype = hdrs.get("content-type", "").split(";")[0].strip()
    what = "%s %s -> %d" % (rec["method"], path, status)
    p, item = spec.match(path)
    if item is None:
        # an unknown path: 404, or 401 first when a token is wanted, or 400
        # when the request was refused before routing (its framing, or a
        # control byte in its target: docs/errors.md HTTP-400-*), or 414 and
        # 431 for a target or header over the daemon's limits (HTTP-414,
        # HTTP-431), also checked before routing
        if status not in (400, 401, 404, 414, 431) or ctype != "application/problem+json":
            out.append("%s: a path the document does not have, answered other than 404 problem" % what)
        return out, None
    op_method = "get" if method == "head" else method
    if op_method not in item:
        if status == 405 and "allow" in hdrs:
            return out, None
        if status == 401:  # authentication comes before the method check
            return out, None
        out.append("%s: method %s is not in the document for %s" % (what, method, p))
        return out, None
    op = item[op_method]
    resps = op.get("responses", {})
    resp = resps.get(str(status)) or resps.get("default")
    if resp is None:
        out.append("%s: status %d is not listed for %s (%s)" % (what, status, op.get("operationId"), p))
        return out, op.get("operationId")
    resp = spec.deref(resp)
    content = resp.get("content", {})
    if content:
        if ctype not in content:
            out.append("%s: Content-Type %r is not among %s" % (what, ctype, sorted(content)))
    elif rec.get("body_kind") not in ("none", None) and method != "head":
        out.append("%s: a body (%s) where the document lists none" % (what, rec.get("body_kind")))
    # a streamed body's own record carries the body only; its headers were
    # checked on the response's record
    for h, hs in ({} if rec.get("stream_body") else resp.get("headers", {})).items():
        hs = spec.deref(hs)
        if hs.get("required") and h.lower() not in hdrs:
            out.append("%s: header %s is missing" % (what, h))
    if rec.get("body_kind") == "bad-json":
        out.append("%s: the body is not JSON" % what)
    if "body" in rec and ctype in content:
        schema = content[ctype].get("schema")
        if schema is not None:
            validate(spec, schema, rec["body"], what, out)
    return out, op.get("operationId")


def lint(spec):
    out, ids = [], {}
    def walk(node, where):
        if isinstance(node, dict):
            if "$ref" in node:
                try:
                    spec.ref(node["$ref"])
                except (KeyError, TypeError):
                    out.append("%s: $ref %s does not resolve" % (where, node["$ref"]))
            for k, v in node.items():
                walk(v, where + "/" + str(k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, "%s[%d]" % (where, i))
    walk(spec.doc, "#")
    for p, item in spec.doc["paths"].items():
        for m in METHODS:
            if m in item:
                oid = item[m].get("operationId")
                if not oid:
                    out.append("%s %s has no operationId" % (m.upper(), p))
                elif oid in ids:
                    out.append("operationId %s is used twice (%s, %s %s)" % (oid, ids[oid], m.upper(), p))
                else:
                    ids[oid] = "%s %s" % (m.upper(), p)
    return out, ids


def records(paths):
    for f in paths:
        with open(f, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    yield "%s:%d" % (f, n), json.loads(line)


def main():
    cmd, spec = sys.argv[1], Spec(sys.argv[2])
    if cmd == "lint":
        out, ids = lint(spec)
        for o in out:
            print("openapi:", o)
        print("openapi lint: %d operations, %d problems" % (len(ids), len(out)))
        return 1 if out else 0
    bad, n, seen = 0, 0, set()
    for where, rec in records(sys.argv[3:]):
        n += 1
        out, oid = check_record(spec, rec)
        if oid:
            seen.add(oid)
        for o in out[:5]:
            bad += 1
            if bad <= 40:
                print("openapi: %s: %s" % (where, o))
    if cmd == "coverage":
        _, ids = lint(spec)
        missing = sorted(set(ids) - seen)
        for m in missing:
            print("openapi: no recorded response reached %s (%s)" % (m, ids[m]))
        print("openapi coverage: %d of %d operations reached" % (len(ids) - len(missing), len(ids)))
        return 1 if missing or bad else 0
    print("openapi check: %d responses, %d violations" % (n, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
