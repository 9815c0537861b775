// Regenerates vectors.json: Service-Wallet-Signature header values made by
// @turnkey/api-key-stamper (the exact version pinned in package.json), for the
// Go tests of package signedretry.
//
//	cd signedretry/testdata/stamp && npm ci && node generate.js > vectors.json
//
// The stamper has three signing implementations and picks one at run time
// (dist/index.js, detectRuntime):
//
//   - "node":    node:crypto createSign("SHA256"); OpenSSL emits DER.
//   - "browser": WebCrypto crypto.subtle.sign (IEEE P1363 r||s), converted to
//                DER by a tink-derived converter. Chosen automatically only
//                when globalThis.window.document and crypto.subtle exist.
//   - "purejs":  @noble/curves p256.sign over sha256-uint8array, toDERHex().
//                Chosen automatically when neither a browser nor Node is
//                detected (React Native, old browsers).
//
// The package exports only its index ("exports": {".": ...}), so the internal
// modules dist/nodecrypto.js, dist/webcrypto.js and dist/purejs.js cannot be
// required directly. Each path is forced instead through the documented
// constructor option `runtimeOverride: "node" | "browser" | "purejs"`, which
// signWithApiKey uses in place of detectRuntime(). The "browser" path runs in
// Node 20 because Node exposes WebCrypto as globalThis.crypto. The script
// checks that each path really ran: purejs signs deterministically (RFC 6979),
// the other two do not.
//
// None of the paths normalises signatures to low-S, so about half of the
// vectors carry a high-S signature; each vector records whether it does.
// Keys are fresh on every run, and two of the signers are randomised, so a
// regenerated file differs from the committed one; the Go tests only depend
// on the properties each vector records.
"use strict";

const crypto = require("node:crypto");
const { ApiKeyStamper } = require("@turnkey/api-key-stamper");
const path = require("node:path");
const fs = require("node:fs");

// The package's "exports" map hides package.json; read the installed version
// from the file next to its entry point.
const stamperPackage = JSON.parse(
  fs.readFileSync(path.join(path.dirname(require.resolve("@turnkey/api-key-stamper")), "..", "package.json"), "utf8"),
);

// P-256 group order.
const N = BigInt("0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");

const RUNTIMES = ["node", "browser", "purejs"];

const PAYLOADS = [
  {
    name: "payload-to-sign",
    text: '{"type":"ADD_CREDENTIAL","requestId":"Request:7c4a8d09-ca37-4e5b-9c1d-2f0b6a3e8f11","accountId":"InternalAccount:019d5a0e-6b1c-7a53-8d2f-4c3b2a190817","parameters":{"credentialType":"PASSKEY","nickname":"Work laptop"},"bodySha256":"5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef","timestampMs":"1767225600000","expiresAt":"2026-01-01T00:05:00Z"}',
  },
  {
    name: "turnkey-activity",
    text: '{"organizationId":"org_abc123","parameters":{"apiKeyIds":["key_1"],"userId":"user_9"},"timestampMs":"1746736509954","type":"ACTIVITY_TYPE_DELETE_API_KEYS"}',
  },
  { name: "empty", text: "" },
  { name: "plain-ascii", text: "hello from walletgate" },
  { name: "latin1-accents", text: '{"nickname":"café crème brûlée","city":"Zürich"}' },
  { name: "emoji-surrogate-pairs", text: '{"memo":"coffee ☕ locked 🔐 rocket 🚀"}' },
  { name: "cjk-and-rtl", text: '{"memo":"送金テスト تحويل مالي 송금"}' },
  // "e" followed by U+0301 COMBINING ACUTE ACCENT: different bytes from "é".
  { name: "combining-mark-nfd", text: '{"nickname":"cafe\u0301"}' },
  // The JSON escape stays six ASCII characters in the signed bytes.
  { name: "escaped-json-and-whitespace", text: '{\n\t"nickname": "caf\\u00e9",\n\t"note": "tab\\tquote\\""\n}' },
];

function hex(buf) {
  return Buffer.from(buf).toString("hex");
}

// newKey returns a fresh P-256 key as the stamper takes it: a 64-hex private
// scalar and a 66-hex compressed public key. With leadingZero the scalar's
// first byte is 0x00, which exercises the stamper's JWK padding.
function newKey(leadingZero) {
  const ecdh = crypto.createECDH("prime256v1");
  if (leadingZero) {
    ecdh.setPrivateKey(Buffer.concat([Buffer.alloc(1), crypto.randomBytes(31)]));
  } else {
    ecdh.generateKeys();
  }
  const priv = ecdh.getPrivateKey().toString("hex").padStart(64, "0");
  return { privateKey: priv, publicKey: ecdh.getPublicKey("hex", "compressed") };
}

// parseDer reads SEQUENCE{INTEGER r, INTEGER s} with short-form lengths (all
// P-256 signatures fit) and returns r and s.
function parseDer(der) {
  if (der[0] !== 0x30 || der[1] !== der.length - 2) throw new Error("unexpected DER: " + hex(der));
  let i = 2;
  const ints = [];
  for (let k = 0; k < 2; k++) {
    if (der[i] !== 0x02) throw new Error("unexpected DER: " + hex(der));
    const len = der[i + 1];
    ints.push(BigInt("0x" + hex(der.subarray(i + 2, i + 2 + len))));
    i += 2 + len;
  }
  if (i !== der.length) throw new Error("trailing DER bytes: " + hex(der));
  return { r: ints[0], s: ints[1] };
}

async function stamp(runtime, key, text) {
  const stamper = new ApiKeyStamper({
    apiPublicKey: key.publicKey,
    apiPrivateKey: key.privateKey,
    runtimeOverride: runtime,
  });
  const { stampHeaderName, stampHeaderValue } = await stamper.stamp(text);
  if (stampHeaderName !== "X-Stamp") throw new Error("unexpected header name " + stampHeaderName);
  const decoded = JSON.parse(Buffer.from(stampHeaderValue, "base64url").toString("utf8"));
  return { header: stampHeaderValue, decoded };
}

function record(name, runtime, key, text, st, note) {
  const der = Buffer.from(st.decoded.signature, "hex");
  const { s } = parseDer(der);
  const v = {
    name: runtime + "/" + name,
    runtime,
    payload: text,
    payloadHex: hex(Buffer.from(text, "utf8")),
    privateKey: key.privateKey,
    publicKey: key.publicKey,
    stamp: st.header,
    signatureDerBytes: der.length,
    highS: s > N / 2n,
  };
  if (note) v.note = note;
  return v;
}

// checkPath confirms the runtime override selected the intended signer:
// only purejs (noble, RFC 6979) is deterministic.
async function checkPath(runtime) {
  const key = newKey(false);
  const a = await stamp(runtime, key, "determinism probe");
  const b = await stamp(runtime, key, "determinism probe");
  const deterministic = a.decoded.signature === b.decoded.signature;
  if (deterministic !== (runtime === "purejs")) {
    throw new Error(`runtime ${runtime}: deterministic=${deterministic}, the override did not select the expected signer`);
  }
}

async function main() {
  const vectors = [];
  for (const runtime of RUNTIMES) {
    await checkPath(runtime);
    for (const p of PAYLOADS) {
      const key = newKey(p.name === "plain-ascii");
      const st = await stamp(runtime, key, p.text);
      vectors.push(record(p.name, runtime, key, p.text, st, p.name === "plain-ascii" ? "private scalar has a leading zero byte" : ""));
    }
    // A long non-ASCII payload, signed until the DER signature is shorter
    // than 70 bytes (r or s below 2^248, about one signature in 128): the
    // minimal-INTEGER encoding every verifier must accept.
    const key = newKey(false);
    const base = '{"memo":"' + "Überweisung für Frühstück ☕ ".repeat(100) + '","n":';
    for (let i = 0; ; i++) {
      const text = base + i + "}";
      const st = await stamp(runtime, key, text);
      if (Buffer.from(st.decoded.signature, "hex").length < 70) {
        vectors.push(record("long-short-der", runtime, key, text, st, "DER signature under 70 bytes"));
        break;
      }
      if (i > 20000) throw new Error("no short DER signature found");
    }
  }
  const out = {
    description: "Service-Wallet-Signature stamps made by @turnkey/api-key-stamper; regenerate with generate.js",
    generator: "generate.js",
    library: stamperPackage.name + "@" + stamperPackage.version,
    node: process.version,
    scheme: "SIGNATURE_SCHEME_TK_API_P256",
    highSCount: vectors.filter((v) => v.highS).length,
    vectors,
  };
  process.stdout.write(JSON.stringify(out, null, 2) + "\n");
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
