"""schemathesis hooks for scripts/api-fuzz.sh.

The fuzzer draws Idempotency-Key values from the key's pattern, so it sends short keys such as
"0" again and again with different bodies, and the API rightly refuses a key reused with another
request (422 idempotency-key-reused). That is the client breaking the key's contract, which no
schema can state, and it would hide every other refusal of a schema-valid request. So a key the
document allows is made unique (its own prefix kept, still within the documented pattern and
length); a key the document refuses is sent as drawn, so the server's refusal of it is still
checked. The pattern and the length are read from the operation's own parameter.

An eval (`POST /v1/evals`) the fuzzer draws may ask for thousands of runs (cases x models x
repeat, up to 5,000), each of which the local stack would really run during the fuzz and after
it. Such a body stays schema-valid when its repeat, concurrency and case list are cut to one
run at a time of at most two cases: the checks still see what the server answers it.
"""

import re
import uuid

import schemathesis

HEADER = "idempotency-key"
SUFFIX_LENGTH = 33  # "-" and 32 hex digits


def documented_key(operation):
    """The header's schema as the operation declares it, or None."""
    for parameter in operation.definition.raw.get("parameters", []):
        if parameter.get("in") == "header" and parameter.get("name", "").lower() == HEADER:
            return parameter.get("schema", {})
    return None


def bounded_eval(case):
    """A drawn eval body cut to a few runs (see above); other requests as they are."""
    body = case.body
    if case.operation.method.upper() != "POST" or case.operation.path != "/v1/evals" or not isinstance(body, dict):
        return
    if isinstance(body.get("repeat"), int):
        body["repeat"] = 1
    if isinstance(body.get("concurrency"), int):
        body["concurrency"] = 1
    if isinstance(body.get("models"), list):
        body["models"] = body["models"][:2]
    suite = body.get("suite")
    if isinstance(suite, dict) and isinstance(suite.get("cases"), list):
        suite["cases"] = suite["cases"][:2]


@schemathesis.hook
def before_call(context, case, kwargs):
    bounded_eval(case)
    headers = case.headers or {}
    name = next((key for key in headers if key.lower() == HEADER), None)
    schema = documented_key(case.operation)
    if name is None or schema is None or not isinstance(headers[name], str):
        return
    key = headers[name]
    pattern = re.compile(schema["pattern"])
    if pattern.search(key) and len(key) <= schema["maxLength"]:
        unique = f"{key[: schema['maxLength'] - SUFFIX_LENGTH]}-{uuid.uuid4().hex}"
        # The pattern holds for the unique key too (printable ASCII, no space at either end).
        if pattern.search(unique):
            headers[name] = unique

