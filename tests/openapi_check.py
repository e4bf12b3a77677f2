#!/usr/bin/env python3
"""Holds docs/openapi.json to what redbloomd really does.

Usage: openapi_check.py OPENAPI_JSON EXCHANGES_JSON

EXCHANGES_JSON is written by tests/server_openapi_test.cc:
  {"routes":      [{"path": "/v1/filters/{name}", "methods": "GET, HEAD, PUT, DELETE"}, ...],
   "exchanges":   [{"method", "target", "status", "headers": {lower-case name: value},
                    "body", "request_body"}, ...],
   "unexercised": [{"operation": "PUT /v1/filters/{name}" or "*", "status": "501",
                    "why": "..."}, ...]}

Checks, each reported with what differs:
  1. the document: OpenAPI 3.1, every schema valid JSON Schema 2020-12, every
     $ref resolves, operationIds unique, path parameters declared;
  2. routes: the server's (path, method) pairs and the document's are the same
     set (HEAD is implied by GET and not listed);
  3. answers: each real answer's status is documented for its operation (404
     for unknown paths and 405 for unknown methods use the components of those
     names), its content type is documented, its body validates against the
     schema, documented required headers are present; each successful
     request's body validates against the request schema;
  4. coverage: every documented (operation, status) was seen, unless the test
     lists it as unexercised with a reason (and such a listing must name a
     documented status, so it cannot go stale).

Schema validation is python3-jsonschema (Debian's), not hand-written.
Exit status 0 when everything holds, 1 otherwise.
"""

import json
import re
import sys
import warnings

import jsonschema
from jsonschema import Draft202012Validator

HTTP_METHODS = ("get", "put", "post", "delete", "patch", "options", "head", "trace")


def fail_list():
    problems = []

    def add(msg):
        problems.append(msg)

    return problems, add


def pointer_get(doc, ref):
    if not ref.startswith("#/"):
        raise KeyError(f"only local $refs are used here, not {ref}")
    node = doc
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[part]
    return node


def walk_refs(node, path, out):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                out.append((path, v))
            else:
                walk_refs(v, f"{path}/{k}", out)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            walk_refs(v, f"{path}/{i}", out)


def resolve(doc, obj):
    seen = 0
    while isinstance(obj, dict) and "$ref" in obj:
        obj = pointer_get(doc, obj["$ref"])
        seen += 1
        if seen > 20:
            raise ValueError("$ref loop")
    return obj


class Schemas:
    """Validates instances against schemas inside the document, resolving
    "#/components/..." against the whole document."""

    def __init__(self, doc):
        self.doc = doc
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            self.resolver = jsonschema.RefResolver(base_uri="", referrer=doc)

    def errors(self, schema, instance):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            v = Draft202012Validator(schema, resolver=self.resolver)
            return [
                f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
                for e in v.iter_errors(instance)
            ]


def check_document(doc, add):
    if not str(doc.get("openapi", "")).startswith("3.1."):
        add(f"document: openapi is {doc.get('openapi')!r}, expected 3.1.x")
    for key in ("info", "paths", "components"):
        if key not in doc:
            add(f"document: no {key}")
    refs = []
    walk_refs(doc, "#", refs)
    for where, ref in refs:
        try:
            pointer_get(doc, ref)
        except (KeyError, TypeError) as e:
            add(f"document: {where}: $ref {ref} does not resolve ({e})")
    for name, schema in doc.get("components", {}).get("schemas", {}).items():
        try:
            Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as e:
            add(f"document: components/schemas/{name} is not valid JSON Schema 2020-12: {e.message}")
    op_ids = {}
    for path, item in doc.get("paths", {}).items():
        placeholders = set(re.findall(r"\{([^}]+)\}", path))
        for method, op in item.items():
            if method not in HTTP_METHODS:
                continue
            where = f"{method.upper()} {path}"
            oid = op.get("operationId")
            if not oid:
                add(f"document: {where} has no operationId")
            elif oid in op_ids:
                add(f"document: operationId {oid} is used by {op_ids[oid]} and {where}")
            else:
                op_ids[oid] = where
            declared = set()
            for p in op.get("parameters", []) + item.get("parameters", []):
                p = resolve(doc, p)
                if p.get("in") == "path":
                    declared.add(p.get("name"))
                if "schema" in p:
                    try:
                        Draft202012Validator.check_schema(p["schema"])
                    except jsonschema.SchemaError as e:
                        add(f"document: {where} parameter {p.get('name')}: {e.message}")
            if declared != placeholders:
                add(f"document: {where} declares path parameters {sorted(declared)}, "
                    f"the path has {sorted(placeholders)}")
            if not op.get("responses"):
                add(f"document: {where} has no responses")
            for status, resp in op.get("responses", {}).items():
                resp = resolve(doc, resp)
                if "description" not in resp:
                    add(f"document: {where} {status} has no description")
                for media, content in resp.get("content", {}).items():
                    try:
                        Draft202012Validator.check_schema(content.get("schema", {}))
                    except jsonschema.SchemaError as e:
                        add(f"document: {where} {status} {media}: {e.message}")


def check_routes(doc, routes, add):
    server = set()
    for r in routes:
        for m in (x.strip() for x in r["methods"].split(",")):
            if m and m != "HEAD":
                server.add((r["path"], m))
        if "GET" in r["methods"] and "HEAD" not in r["methods"]:
            add(f"routes: {r['path']} answers GET but not HEAD; the document says HEAD goes with GET")
    documented = set()
    for path, item in doc["paths"].items():
        for method in item:
            if method in HTTP_METHODS and method != "head":
                documented.add((path, method.upper()))
    for path, method in sorted(server - documented):
        add(f"routes: the server answers {method} {path}, the document does not list it")
    for path, method in sorted(documented - server):
        add(f"routes: the document lists {method} {path}, the server does not answer it")


def template_regex(path):
    out = ""
    for part in re.split(r"(\{[^}]+\})", path):
        if part == "{item}":
            out += ".+"  # everything after items/, slashes included
        elif part.startswith("{"):
            out += "[^/]+"
        else:
            out += re.escape(part)
    return re.compile(out)


def check_exchanges(doc, data, add):
    schemas = Schemas(doc)
    templates = [(template_regex(p), p) for p in doc["paths"]]
    components = doc["components"]["responses"]
    seen = set()
    for n, ex in enumerate(data["exchanges"]):
        method, target, status = ex["method"], ex["target"], ex["status"]
        label = f"answer {n} ({method} {target[:80]} -> {status})"
        if status == 0:
            add(f"{label}: no response: {ex['body'][:200]}")
            continue
        path = target.split("?", 1)[0]
        matched = [p for rx, p in templates if rx.fullmatch(path)]
        if len(matched) > 1:
            add(f"{label}: matches several paths {matched}")
            continue
        request_schema = None
        if not matched:
            if status != 404:
                add(f"{label}: the path is not in the document, so the answer must be 404")
                continue
            key, response = "unknown path 404", components["NotFound"]
        else:
            item = doc["paths"][matched[0]]
            op = item.get(method.lower())
            if op is None and method == "HEAD":
                op = item.get("get")
            if op is None:
                if status != 405:
                    add(f"{label}: {method} is not documented on {matched[0]}, so the answer "
                        "must be 405")
                    continue
                key, response = "unknown method 405", components["MethodNotAllowed"]
            else:
                key = f"{method} {matched[0]}"
                response = op["responses"].get(str(status), op["responses"].get("default"))
                if response is None:
                    add(f"{label}: status {status} is not documented for {key} "
                        f"(documented: {', '.join(sorted(op['responses']))})")
                    continue
                if "requestBody" in op and 200 <= status < 300:
                    request_schema = resolve(doc, op["requestBody"])["content"]["application/json"]["schema"]
        response = resolve(doc, response)
        seen.add((key, str(status)))

        for name, header in response.get("headers", {}).items():
            header = resolve(doc, header)
            if header.get("required") and name.lower() not in ex["headers"]:
                add(f"{label}: the document requires header {name}; the answer has none")
        content = response.get("content", {})
        ctype = ex["headers"].get("content-type", "").split(";")[0].strip().lower()
        if method == "HEAD":
            continue
        if not content:
            if ex["body"]:
                add(f"{label}: the document says no body; the answer has one")
            continue
        if ctype not in content:
            add(f"{label}: content type {ctype!r} is not documented ({', '.join(content)})")
            continue
        schema = content[ctype].get("schema", {})
        if ctype == "application/json" or ctype.endswith("+json"):
            try:
                body = json.loads(ex["body"])
            except ValueError as e:
                add(f"{label}: the body is not JSON ({e}): {ex['body'][:200]}")
                continue
        else:
            body = ex["body"]
        for err in schemas.errors(schema, body):
            add(f"{label}: response body: {err}\n    body: {ex['body'][:300]}")
        if request_schema is not None and ex.get("request_body"):
            for err in schemas.errors(request_schema, json.loads(ex["request_body"])):
                add(f"{label}: the server accepted a request body the document rejects: {err}\n"
                    f"    request: {ex['request_body'][:300]}")
    return seen


def check_coverage(doc, data, seen, add):
    unexercised = {(u["operation"], str(u["status"])) for u in data.get("unexercised", [])}
    documented = set()
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method in HTTP_METHODS:
                for status in op["responses"]:
                    documented.add((f"{method.upper()} {path}", status))
    for key, status in sorted(documented - seen):
        if (key, status) not in unexercised and ("*", status) not in unexercised:
            add(f"coverage: {key} documents {status}, but no answer of the test had it "
                "(exercise it, or list it as unexercised with the reason)")
    for key, status in sorted(unexercised):
        if key == "*":
            if not any(s == status for _, s in documented):
                add(f"coverage: status {status} is listed as unexercised but no operation documents it")
        elif (key, status) not in documented:
            add(f"coverage: {key} {status} is listed as unexercised but is not documented")
    for key in ("unknown path 404", "unknown method 405"):
        if (key, key[-3:]) not in seen:
            add(f"coverage: no answer for an {key[:-4]}")


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    with open(argv[2], encoding="utf-8") as f:
        data = json.load(f)
    problems, add = fail_list()
    check_document(doc, add)
    if not problems:
        check_routes(doc, data["routes"], add)
        seen = check_exchanges(doc, data, add)
        check_coverage(doc, data, seen, add)
    for p in problems:
        print(f"openapi_check: {p}")
    if problems:
        print(f"openapi_check: {len(problems)} problems")
        return 1
    ops = sum(1 for item in doc["paths"].values() for m in item if m in HTTP_METHODS)
    print(f"openapi_check: ok: {len(data['exchanges'])} answers, {ops} operations, "
          f"{len(seen)} (operation, status) pairs seen")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
