"""schemathesis hooks for scripts/api-fuzz.sh.

The fuzzer draws Idempotency-Key values from the key's pattern, so it sends short keys such as
"0" again and again with different bodies, and the API rightly refuses a key reused with another
request (422 idempotency-key-reused). That is the client breaking the key's contract, which no
schema can state, and it would hide every other refusal of a schema-valid request. So a key the
document allows is made unique (its own prefix kept, still within the documented pattern and
length); a key the document refuses is sent as drawn, so the server's refusal of it is still
checked.
"""

import re
import uuid

import schemathesis

HEADER = "Idempotency-Key"
MAX_LENGTH = 255
SUFFIX_LENGTH = 33  # "-" and 32 hex digits
# The pattern the document declares (src/api/idempotency.ts IDEMPOTENCY_KEY_PATTERN).
VALID_KEY = re.compile(r"^[!-~]([ -~]{0,253}[!-~])?$")


@schemathesis.hook
def before_call(context, case, kwargs):
    headers = case.headers or {}
    key = headers.get(HEADER)
    if isinstance(key, str) and VALID_KEY.fullmatch(key):
        headers[HEADER] = f"{key[: MAX_LENGTH - SUFFIX_LENGTH]}-{uuid.uuid4().hex}"
