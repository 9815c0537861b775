// What the page checks in a payloadToSign before it stamps it: the rules of
// Go's stamper.ParsePayload and stamper.Expectation.Check, ported.
//
// A stamp authorizes whatever operation the payload names, whoever relayed
// the challenge. The payload names no method or path, so the route the page
// called is bound by the operation type that route has (ROUTE_TYPES), by
// the parameters (which carry the path's ids and every value the operation
// uses) and by bodySha256, the SHA-256 of the canonical form of the body the
// page sent. Anything the page cannot compare is refused.

// PAYLOAD_MEMBERS are the members of a payload: each required, no other.
const PAYLOAD_MEMBERS = ["type", "requestId", "accountId", "parameters", "bodySha256", "timestampMs", "expiresAt"];

// MAX_PAYLOAD_BYTES bounds a payloadToSign (stamper.MaxPayloadBytes).
const MAX_PAYLOAD_BYTES = 1 << 20;

// ROUTE_TYPES maps the signed routes (method and path under the base path)
// to the operation type their payloads must name.
const ROUTE_TYPES = [
  ["PATCH", /^\/internal-accounts\/[^/]+$/, "UPDATE_WALLET_PRIVACY"],
  ["POST", /^\/internal-accounts\/[^/]+\/export$/, "EXPORT_WALLET"],
  ["POST", /^\/transfer-out$/, "TRANSFER_OUT"],
  ["POST", /^\/quotes\/[^/]+\/execute$/, "EXECUTE_QUOTE"],
  ["POST", /^\/auth\/credentials$/, "ADD_CREDENTIAL"],
  ["DELETE", /^\/auth\/credentials\/[^/]+$/, "REVOKE_CREDENTIAL"],
  ["POST", /^\/auth\/credentials\/[^/]+\/verify$/, "VERIFY_OTP"],
  ["DELETE", /^\/auth\/sessions\/[^/]+$/, "REVOKE_SESSION"],
  ["POST", /^\/auth\/sessions\/[^/]+\/refresh$/, "REFRESH_SESSION"],
];

// Refusal is a payload the page will not stamp. check names the failed
// check, as details.check of Go's 401 UNAUTHORIZED does ("route", "type",
// "requestId", "accountId", "bodySha256", "parameters", "expiresAt"), or
// "payloadToSign" for a payload that does not parse.
export class Refusal extends Error {
  constructor(check, reason) {
    super(`refusing to stamp the payload: ${check}: ${reason}`);
    this.check = check;
    this.reason = reason;
  }
}

// routeType returns the operation type of a signed route, or throws a
// Refusal for a route the page does not know.
export function routeType(method, path) {
  const p = path.split("?")[0];
  for (const [m, re, type] of ROUTE_TYPES) {
    if (m === method && re.test(p)) return type;
  }
  throw new Refusal("route", `${method} ${p} is not a signed route this page knows`);
}

// parseStrict parses JSON text, refusing what JSON.parse would let through
// silently: an object with two members of one name, or with two names that
// differ only in case, and a number JavaScript cannot hold exactly (an
// integer outside the safe range). It throws an Error naming the problem.
export function parseStrict(text) {
  let i = 0;
  const fail = (why) => {
    throw new Error(`${why} at offset ${i}`);
  };
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i])) i++;
  };
  const value = (depth) => {
    if (depth > 64) fail("nesting deeper than 64");
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const out = {};
      const folded = new Set();
      ws();
      if (text[i] === "}") {
        i++;
        return out;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail("expected a member name");
        const name = string();
        if (Object.prototype.hasOwnProperty.call(out, name)) fail(`member ${JSON.stringify(name)} repeated`);
        if (folded.has(name.toLowerCase()) || folded.has(name.toUpperCase())) fail(`member names differing only in case (${JSON.stringify(name)})`);
        folded.add(name.toLowerCase());
        folded.add(name.toUpperCase());
        ws();
        if (text[i++] !== ":") fail("expected ':'");
        Object.defineProperty(out, name, { value: value(depth + 1), enumerable: true, writable: true, configurable: true });
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i++] !== "}") fail("expected ',' or '}'");
        return out;
      }
    }
    if (c === "[") {
      i++;
      const out = [];
      ws();
      if (text[i] === "]") {
        i++;
        return out;
      }
      for (;;) {
        out.push(value(depth + 1));
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i++] !== "]") fail("expected ',' or ']'");
        return out;
      }
    }
    if (c === '"') return string();
    for (const [lit, v] of [["true", true], ["false", false], ["null", null]]) {
      if (text.startsWith(lit, i)) {
        i += lit.length;
        return v;
      }
    }
    const m = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i, i + 600));
    if (!m) fail("unexpected character");
    if (m[0].length > 512) fail("number literal longer than 512 bytes");
    i += m[0].length;
    const n = Number(m[0]);
    if (!Number.isFinite(n)) fail("number out of range");
    if (!m[2] && !m[3] && !Number.isSafeInteger(n)) fail("integer beyond 2^53 cannot be compared exactly");
    return n;
  };
  const string = () => {
    const start = i;
    i++;
    for (;;) {
      if (i >= text.length) fail("unterminated string");
      const ch = text.charCodeAt(i);
      if (ch === 0x22) break;
      if (ch < 0x20) fail("control character in a string");
      if (ch === 0x5c) i++;
      i++;
    }
    i++;
    let s;
    try {
      s = JSON.parse(text.slice(start, i));
    } catch {
      fail("malformed string");
    }
    if (!s.isWellFormed()) fail("string with an unpaired surrogate");
    return s;
  };
  if (typeof text !== "string") throw new Error("not a string");
  const v = value(1);
  ws();
  if (i !== text.length) fail("trailing data");
  return v;
}

// canonical is the canonical JSON of a parsed value (Go's
// apierror.Canonicalize for the values parseStrict returns): members sorted
// by name as UTF-16 code units, no white space, numbers as ECMAScript writes
// them.
export function canonical(v) {
  if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
  if (v !== null && typeof v === "object") {
    return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + canonical(v[k])).join(",") + "}";
  }
  if (typeof v === "number" && Object.is(v, -0)) return "0";
  return JSON.stringify(v);
}

// bodySha256 is the lowercase hex SHA-256 of the canonical form of a body as
// sent (stamper.BodyDigest); no body, or white space only, digests the
// empty string.
export async function bodySha256(body) {
  const canon = body === undefined || body.trim() === "" ? "" : canonical(parseStrict(body));
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(canon));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

// parsePayload reads a payloadToSign strictly, as stamper.ParsePayload:
// one JSON object with exactly the seven members, each of its type and form.
// It throws a Refusal with check "payloadToSign".
export function parsePayload(payloadToSign) {
  const bad = (why) => new Refusal("payloadToSign", `payloadToSign ${why}`);
  if (typeof payloadToSign !== "string") throw bad("is not a string");
  if (new TextEncoder().encode(payloadToSign).length > MAX_PAYLOAD_BYTES) throw bad(`is longer than ${MAX_PAYLOAD_BYTES} bytes`);
  let p;
  try {
    p = parseStrict(payloadToSign);
  } catch (e) {
    throw bad(`is not acceptable JSON: ${e.message}`);
  }
  if (p === null || typeof p !== "object" || Array.isArray(p)) throw bad("is not a JSON object");
  for (const name of Object.keys(p)) {
    if (!PAYLOAD_MEMBERS.includes(name)) throw bad(`has an unknown member ${JSON.stringify(name)}`);
  }
  for (const m of PAYLOAD_MEMBERS) {
    if (!Object.prototype.hasOwnProperty.call(p, m)) throw bad(`member ${m} is missing`);
  }
  for (const m of ["type", "requestId", "accountId", "bodySha256", "timestampMs", "expiresAt"]) {
    if (typeof p[m] !== "string") throw bad(`member ${m} is not a string`);
  }
  if (p.type === "") throw bad("member type is empty");
  if (!/^Request:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(p.requestId)) throw bad('member requestId is not "Request:<uuid>"');
  if (p.accountId === "") throw bad("member accountId is empty");
  if (p.parameters === null || typeof p.parameters !== "object" || Array.isArray(p.parameters)) throw bad("member parameters is not a JSON object");
  if (!/^[0-9a-f]{64}$/.test(p.bodySha256)) throw bad("member bodySha256 is not 64 lowercase hex digits");
  if (!/^(0|[1-9][0-9]{0,15})$/.test(p.timestampMs) || !Number.isSafeInteger(Number(p.timestampMs))) throw bad("member timestampMs is not a decimal millisecond time");
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(p.expiresAt) || Number.isNaN(Date.parse(p.expiresAt))) {
    throw bad("member expiresAt is not an RFC 3339 time");
  }
  return p;
}

// checkPayload checks payloadToSign against what the page asked for, in the
// order of Expectation.Check: the route's operation type, the accountId, the
// digest of the body sent, the parameters (equal as JSON values, no member
// more or less), the expiry. It also requires the payload's requestId to be
// the 202's (the Request-Id the retry will carry). want is {method, path,
// accountId, body (the string sent, or undefined), parameters, requestId,
// now?}. It returns the parsed payload, or throws a Refusal; it never
// accepts what it cannot compare.
export async function checkPayload(payloadToSign, want) {
  if (!want || typeof want.accountId !== "string" || want.accountId === "") throw new Refusal("accountId", "the page named no account");
  const type = routeType(want.method, want.path);
  const p = parsePayload(payloadToSign);
  if (p.type !== type) throw new Refusal("type", `the payload is a ${JSON.stringify(p.type)} operation, not ${JSON.stringify(type)} (${want.method} ${want.path})`);
  if (want.requestId !== undefined && p.requestId !== want.requestId) throw new Refusal("requestId", "the payload names another request than the 202");
  if (p.accountId !== want.accountId) throw new Refusal("accountId", "the payload acts on another account");
  let digest;
  try {
    digest = await bodySha256(want.body);
  } catch (e) {
    throw new Refusal("bodySha256", `the body sent is not JSON the page can digest: ${e.message}`);
  }
  if (p.bodySha256 !== digest) throw new Refusal("bodySha256", "the payload binds another body than the one sent");
  const got = canonical(p.parameters);
  const exp = canonical(want.parameters ?? {});
  if (got !== exp) throw new Refusal("parameters", `the payload's parameters ${got.slice(0, 512)} are not the expected ${exp.slice(0, 512)}`);
  const now = want.now ?? Date.now();
  if (!(now < Date.parse(p.expiresAt))) throw new Refusal("expiresAt", `the payload expired at ${p.expiresAt}`);
  return p;
}
