// generate.mjs: interop vectors for apierror/webhooksig, made with Node's
// WebCrypto (globalThis.crypto.subtle) and nothing else.
//
//   (a) Generates a P-256 key, signs sample webhook bodies and writes
//       vectors.json: the SPKI PEM, each body and its X-Grid-Signature value
//       {"version":1,"signature":"<base64 DER>"} (WebCrypto signs in IEEE
//       P1363 r||s; this script converts to DER), one high-S and one low-S
//       signature forced explicitly, plus bodies the Go Verifier must refuse.
//   (b) Verifies go_signed.json, written by the Go Signer, with
//       crypto.subtle.verify (DER converted back to r||s); it exits non-zero
//       if any fails, and records the count and the file's SHA-256 in
//       vectors.json, which the Go test checks against the committed file.
//
// Regenerate both files (from the repository root):
//
//   WALLETGATE_WRITE_VECTORS=1 go test -run TestWriteGoSignedVectors ./apierror/webhooksig/
//   node apierror/webhooksig/testdata/webcrypto/generate.mjs
//   go test ./apierror/webhooksig/
//
// No dependencies: package.json and package-lock.json pin none.

import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const subtle = globalThis.crypto.subtle;
const here = dirname(fileURLToPath(import.meta.url));
const alg = { name: 'ECDSA', hash: 'SHA-256' };
const curve = { name: 'ECDSA', namedCurve: 'P-256' };
const N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
const TIMESTAMP = '2026-11-23T12:00:00Z'; // the Go test verifies at this time
const enc = new TextEncoder();

const b64 = (bytes) => Buffer.from(bytes).toString('base64');
const hex = (bytes) => Buffer.from(bytes).toString('hex');
const toBig = (bytes) => BigInt('0x' + (hex(bytes) || '0'));
const fromBig = (x) => Uint8Array.from(Buffer.from(x.toString(16).padStart(64, '0'), 'hex'));

// p1363ToDER converts r||s (32 bytes each) to DER SEQUENCE { INTEGER r, INTEGER s }.
function p1363ToDER(sig) {
  const int = (b) => {
    let i = 0;
    while (i < b.length - 1 && b[i] === 0) i++;
    let v = b.slice(i);
    if (v[0] & 0x80) v = Uint8Array.of(0, ...v);
    return [0x02, v.length, ...v];
  };
  const body = [...int(sig.slice(0, 32)), ...int(sig.slice(32))];
  return Uint8Array.from([0x30, body.length, ...body]); // < 128 bytes for P-256
}

// derToP1363 parses a strict DER ECDSA signature into r||s, or throws.
function derToP1363(der) {
  let p = 0;
  const fail = (why) => { throw new Error('bad DER signature: ' + why); };
  if (der[p++] !== 0x30) fail('no SEQUENCE');
  if (der[p++] !== der.length - 2) fail('SEQUENCE length');
  const int = () => {
    if (der[p++] !== 0x02) fail('no INTEGER');
    const len = der[p++];
    const v = der.slice(p, p + len);
    p += len;
    if (len === 0 || len > 33 || v.length !== len) fail('INTEGER length');
    if (v[0] & 0x80) fail('negative INTEGER');
    if (len > 1 && v[0] === 0 && !(v[1] & 0x80)) fail('non-minimal INTEGER');
    return fromBig(toBig(v));
  };
  const r = int(), s = int();
  if (p !== der.length) fail('trailing bytes');
  return Uint8Array.from([...r, ...s]);
}

const header = (der) => JSON.stringify({ version: 1, signature: b64(der) });

function pemOf(spki) {
  const lines = b64(spki).match(/.{1,64}/g).join('\n');
  return `-----BEGIN PUBLIC KEY-----\n${lines}\n-----END PUBLIC KEY-----\n`;
}

function spkiOf(pem) {
  const m = /^-----BEGIN PUBLIC KEY-----\n([A-Za-z0-9+/=\n]+)-----END PUBLIC KEY-----\n?$/.exec(pem);
  if (!m) throw new Error('not an SPKI PEM');
  return Buffer.from(m[1].replace(/\n/g, ''), 'base64');
}

function envelope(type, data, indent) {
  const id = 'Webhook:' + globalThis.crypto.randomUUID();
  return JSON.stringify({ id, type, timestamp: TIMESTAMP, data }, null, indent);
}

async function signDER(key, body) {
  return p1363ToDER(new Uint8Array(await subtle.sign(alg, key, enc.encode(body))));
}

// withS returns der with s replaced by n-s when needed so that s is high
// (wantHigh) or low, and checks that WebCrypto accepts the result.
async function withS(pub, der, body, wantHigh) {
  const rs = derToP1363(der);
  let s = toBig(rs.slice(32));
  if ((s > N / 2n) !== wantHigh) s = N - s;
  const sig = Uint8Array.from([...rs.slice(0, 32), ...fromBig(s)]);
  if (!(await subtle.verify(alg, pub, sig, enc.encode(body)))) throw new Error('WebCrypto refused its own other-S signature');
  return p1363ToDER(sig);
}

const isHighS = (der) => toBig(derToP1363(der).slice(32)) > N / 2n;

// (b) first: if the Go signatures do not verify, write nothing.
const goSignedPath = join(here, 'go_signed.json');
const goSignedBytes = readFileSync(goSignedPath);
const goSigned = JSON.parse(goSignedBytes.toString('utf8'));
const goKey = await subtle.importKey('spki', spkiOf(goSigned.publicKeyPem), curve, false, ['verify']);
let goVerified = 0;
for (const item of goSigned.items) {
  const h = JSON.parse(item.header);
  if (Object.keys(h).sort().join() !== 'signature,version' || h.version !== 1) {
    console.error(`go_signed.json ${item.name}: header ${item.header} is not {"version":1,"signature":...}`);
    process.exit(1);
  }
  const der = Buffer.from(h.signature, 'base64');
  if (b64(der) !== h.signature) {
    console.error(`go_signed.json ${item.name}: signature is not padded standard base64`);
    process.exit(1);
  }
  const sig = derToP1363(der);
  if (!(await subtle.verify(alg, goKey, sig, enc.encode(item.body)))) {
    console.error(`go_signed.json ${item.name}: WebCrypto refused the Go signature`);
    process.exit(1);
  }
  if (await subtle.verify(alg, goKey, sig, enc.encode(item.body + ' '))) {
    console.error(`go_signed.json ${item.name}: WebCrypto accepted a changed body`);
    process.exit(1);
  }
  goVerified++;
}
if (goVerified === 0) {
  console.error('go_signed.json has no items');
  process.exit(1);
}

// (a) WebCrypto-signed vectors.
const { publicKey, privateKey } = await subtle.generateKey(curve, true, ['sign', 'verify']);
const other = await subtle.generateKey(curve, true, ['sign', 'verify']);
const account = (status) => ({
  id: 'ExternalAccount:9f1c2a4e-7b3d-4c5e-8f6a-1b2c3d4e5f60',
  customerId: 'Customer:3a2b1c0d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
  status,
  currency: 'USDC',
  ownershipType: 'FIRST_PARTY',
  accountInfo: { accountType: 'ETHEREUM_WALLET', address: '0x52908400098527886E0F7030069857D2E4169EE7' },
});
const bodies = [
  ['status ACTIVE, compact', envelope('EXTERNAL_ACCOUNT.STATUS_UPDATED', account('ACTIVE'))],
  ['status UNVERIFIED, compact', envelope('EXTERNAL_ACCOUNT.STATUS_UPDATED', account('UNVERIFIED'))],
  ['pretty-printed, non-ASCII and escapes', envelope('EXTERNAL_ACCOUNT.STATUS_UPDATED', { ...account('ACTIVE'), nickname: 'Zoë ☃ "cold" wallet\\n', amount: 1.5 }, 2)],
];
const valid = [];
for (const [name, body] of bodies) {
  const der = await signDER(privateKey, body);
  valid.push({ name, body, header: header(der), highS: isHighS(der) });
}
for (const wantHigh of [true, false]) {
  const body = bodies[0][1];
  const der = await withS(publicKey, await signDER(privateKey, body), body, wantHigh);
  valid.push({ name: `status ACTIVE, ${wantHigh ? 'high' : 'low'}-S forced`, body, header: header(der), highS: wantHigh });
}

const first = valid[0];
const firstDER = Buffer.from(JSON.parse(first.header).signature, 'base64');
const invalid = [
  { name: 'body changed after signing', body: first.body.replace('ACTIVE', 'INACTIVE'), header: first.header, reason: 'signature invalid' },
  { name: 'signed by another key', body: first.body, header: header(await signDER(other.privateKey, first.body)), reason: 'signature invalid' },
  { name: 'raw WebCrypto r||s instead of DER', body: first.body, header: JSON.stringify({ version: 1, signature: b64(derToP1363(firstDER)) }), reason: 'signature not DER' },
  { name: 'base64url instead of base64', body: first.body, header: JSON.stringify({ version: 1, signature: Buffer.from(firstDER).toString('base64url') }), reason: b64(firstDER) === Buffer.from(firstDER).toString('base64url') ? 'none' : 'signature not base64' },
  { name: 'version 2', body: first.body, header: JSON.stringify({ version: 2, signature: b64(firstDER) }), reason: 'signature version unsupported' },
].filter((v) => v.reason !== 'none');

const digest = new Uint8Array(await subtle.digest('SHA-256', goSignedBytes));
const out = {
  generator: `generate.mjs, Node ${process.version}, globalThis.crypto.subtle`,
  timestamp: TIMESTAMP,
  publicKeyPem: pemOf(new Uint8Array(await subtle.exportKey('spki', publicKey))),
  valid,
  invalid,
  goSignedVerifiedByWebCrypto: true,
  goSignedCount: goVerified,
  goSignedSha256: hex(digest),
};
writeFileSync(join(here, 'vectors.json'), JSON.stringify(out, null, 2) + '\n');
console.log(`vectors.json: ${valid.length} valid, ${invalid.length} invalid; go_signed.json: ${goVerified} verified by WebCrypto`);
