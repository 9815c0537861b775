// Interop vectors for walletauth/envelope, made and checked with the real
// Turnkey client library (@turnkey/crypto) and an independent RFC 9180
// implementation (@hpke/core).
//
// 1. Reads go-vectors.json (written by `go test -run TestGoVectors
//    -update-go-vectors`) and checks every Go-made value the way a browser
//    client would: target bundles through encryptOtpCodeToBundle with the
//    signer pinned, Go-sealed OTP bundles through hpkeDecrypt and @hpke/core,
//    Go-made encryptedSessionSigningKeys through decryptCredentialBundle and
//    @hpke/core, Go-made export bundles (encryptedWalletCredentials) through
//    decryptExportBundle with the Go signer key given as
//    dangerouslyOverrideSignerPublicKey, and @hpke/core. Any failure throws
//    and nothing is written.
// 2. Writes js-vectors.json: values made by the JS side (OTP bundles sealed
//    by the client functions, session keys sealed in the server role), with
//    the private keys Go needs to open them, and goVectorsCheck recording the
//    sha256 of the go-vectors.json that passed.
//
// Run: npm ci && node generate.mjs (or ./regenerate.sh for both steps).

import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import {
  decryptCredentialBundle,
  decryptExportBundle,
  encryptOtpCodeToBundle,
  formatHpkeBuf,
  generateP256KeyPair,
  getPublicKey,
  hpkeDecrypt,
  hpkeEncrypt,
  compressRawPublicKey,
  uncompressRawPublicKey,
} from "@turnkey/crypto";
import {
  bs58check,
  uint8ArrayFromHexString as fromHex,
  uint8ArrayToHexString as toHex,
} from "@turnkey/encoding";
import {
  Aes256Gcm,
  CipherSuite,
  DhkemP256HkdfSha256,
  HkdfSha256,
} from "@hpke/core";

const here = dirname(fileURLToPath(import.meta.url));
const INFO = new TextEncoder().encode("turnkey_hpke");
const suite = new CipherSuite({
  kem: new DhkemP256HkdfSha256(),
  kdf: new HkdfSha256(),
  aead: new Aes256Gcm(),
});

function check(cond, what) {
  if (!cond) {
    throw new Error(`CHECK FAILED: ${what}`);
  }
}

async function mustReject(promiseFn, what) {
  let rejected = false;
  try {
    await promiseFn();
  } catch {
    rejected = true;
  }
  check(rejected, `${what} was accepted but must be rejected`);
}

const concat = (a, b) => {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
};

// RFC 9180 open with @hpke/core and the profile's AAD (enc65 || pkR65).
async function hpkeCoreOpen(recipientPrivHex, enc65, ct) {
  const recipientKey = await suite.kem.deserializePrivateKey(fromHex(recipientPrivHex));
  const pkR = getPublicKey(recipientPrivHex, false);
  const pt = await suite.open({ recipientKey, enc: enc65, info: INFO }, ct, concat(enc65, pkR));
  return new Uint8Array(pt);
}

// RFC 9180 seal with @hpke/core; withAad=false gives plain RFC 9180 (no AAD).
async function hpkeCoreSeal(recipientPub65, pt, withAad = true) {
  const recipientPublicKey = await suite.kem.deserializePublicKey(recipientPub65);
  const sender = await suite.createSenderContext({ recipientPublicKey, info: INFO });
  const enc = new Uint8Array(sender.enc);
  const ct = new Uint8Array(await sender.seal(pt, withAad ? concat(enc, recipientPub65) : undefined));
  return { enc, ct };
}

const pkgVersion = (name) =>
  JSON.parse(readFileSync(join(here, "node_modules", name, "package.json"), "utf8")).version;

const goFile = readFileSync(join(here, "go-vectors.json"));
const goVectors = JSON.parse(goFile.toString("utf8"));
const checked = [];

// ---- 1. Check the Go-made values as the JS client. ----

const signerPublic = goVectors.signer.public;
const otherSigner = generateP256KeyPair().publicKeyUncompressed;
const jsOtp = [];

for (const tb of goVectors.targetBundles) {
  const what = `targetBundles/${tb.name}`;
  const session = generateP256KeyPair();
  // encryptOtpCodeToBundle verifies the envelope against the pinned signer,
  // then seals to targetPublic: it throws on any failure.
  const sealed = await encryptOtpCodeToBundle("123456", tb.otpEncryptionTargetBundle, session.publicKey, signerPublic);
  const env = JSON.parse(tb.otpEncryptionTargetBundle);
  check(env.version === "v1.0.0", `${what}: version`);
  check(env.enclaveQuorumPublic === signerPublic, `${what}: enclaveQuorumPublic is the signer key string`);
  const data = JSON.parse(new TextDecoder().decode(fromHex(env.data)));
  check(data.targetPublic === tb.targetPublic, `${what}: targetPublic`);
  check(data.organizationId === tb.organizationId, `${what}: organizationId`);
  check(data.userId === tb.userId, `${what}: userId`);
  check(toHex(getPublicKey(tb.targetPrivate, false)) === tb.targetPublic, `${what}: target key pair`);
  // The client output must open with the target's private half.
  const msg = JSON.parse(sealed);
  const pt = hpkeDecrypt({
    ciphertextBuf: fromHex(msg.ciphertext),
    encappedKeyBuf: fromHex(msg.encappedPublic),
    receiverPriv: tb.targetPrivate,
  });
  check(
    new TextDecoder().decode(pt) === JSON.stringify({ otp_code: "123456", public_key: session.publicKey }),
    `${what}: sealed attempt opens`,
  );
  // Negative checks: the JS client refuses a wrong pin, the production pin
  // and altered signed data.
  await mustReject(() => encryptOtpCodeToBundle("123456", tb.otpEncryptionTargetBundle, session.publicKey, otherSigner), `${what} with another pinned signer`);
  await mustReject(() => encryptOtpCodeToBundle("123456", tb.otpEncryptionTargetBundle, session.publicKey), `${what} against the production signer`);
  const tampered = { ...env, data: env.data.slice(0, -2) + (env.data.endsWith("7d") ? "20" : "7d") };
  await mustReject(() => encryptOtpCodeToBundle("123456", JSON.stringify(tampered), session.publicKey, signerPublic), `${what} with altered data`);
  jsOtp.push({
    name: `encryptOtpCodeToBundle/${tb.name}`,
    producer: "@turnkey/crypto encryptOtpCodeToBundle (Go-made target bundle, signer pinned)",
    targetPrivate: tb.targetPrivate,
    otpCode: "123456",
    publicKey: session.publicKey,
    encryptedOtpBundle: sealed,
    expect: "ok",
  });
  checked.push(what);
}

for (const o of goVectors.encryptedOtpBundles) {
  const what = `encryptedOtpBundles/${o.name}`;
  const msg = JSON.parse(o.encryptedOtpBundle);
  check(Object.keys(msg).join(",") === "encappedPublic,ciphertext", `${what}: member order`);
  const enc = fromHex(msg.encappedPublic);
  const ct = fromHex(msg.ciphertext);
  check(enc.length === 65 && enc[0] === 4, `${what}: encappedPublic is 65-byte uncompressed`);
  const expected = JSON.stringify({ otp_code: o.otpCode, public_key: o.publicKey });
  check(o.plaintext === expected, `${what}: Go plaintext is JSON.stringify's bytes`);
  const pt = hpkeDecrypt({ ciphertextBuf: ct, encappedKeyBuf: enc, receiverPriv: o.targetPrivate });
  check(new TextDecoder().decode(pt) === expected, `${what}: @turnkey/crypto hpkeDecrypt`);
  const pt2 = await hpkeCoreOpen(o.targetPrivate, enc, ct);
  check(new TextDecoder().decode(pt2) === expected, `${what}: @hpke/core open`);
  checked.push(what);
}

for (const s of goVectors.sessionKeys) {
  const what = `sessionKeys/${s.name}`;
  // What a browser does with the legacy-flow response.
  const priv = decryptCredentialBundle(s.encryptedSessionSigningKey, s.clientPrivate);
  check(priv.length === 64, `${what}: 32-byte session key`);
  check(toHex(getPublicKey(priv, false)) === s.sessionPublic, `${what}: decryptCredentialBundle gives the session key`);
  // The same bytes through an independent RFC 9180 implementation.
  const payload = bs58check.decode(s.encryptedSessionSigningKey);
  check(payload.length === 81, `${what}: 81-byte payload`);
  const enc65 = uncompressRawPublicKey(payload.slice(0, 33));
  const pt = await hpkeCoreOpen(s.clientPrivate, enc65, payload.slice(33));
  check(toHex(pt) === priv, `${what}: @hpke/core open`);
  checked.push(what);
}

for (const e of goVectors.exportBundles) {
  const what = `exportBundles/${e.name}`;
  const env = JSON.parse(e.exportBundle);
  check(Object.keys(env).join(",") === "version,data,dataSignature,enclaveQuorumPublic", `${what}: member order`);
  check(env.version === "v1.0.0", `${what}: version`);
  check(env.enclaveQuorumPublic === signerPublic, `${what}: enclaveQuorumPublic is the signer key string`);
  check(env.dataSignature !== "", `${what}: dataSignature is set`);
  const data = JSON.parse(new TextDecoder().decode(fromHex(env.data)));
  check(Object.keys(data).join(",") === "encappedPublic,ciphertext,organizationId", `${what}: data member order`);
  check(data.organizationId === e.organizationId, `${what}: organizationId`);
  const compressed = e.clientPublicKey.length === 66;
  check(toHex(getPublicKey(e.clientPrivate, compressed)) === e.clientPublicKey, `${what}: client key pair`);
  // What a browser does with the export response: verify the envelope
  // against the pinned signer and the organization, then open it.
  const args = {
    exportBundle: e.exportBundle,
    embeddedKey: e.clientPrivate,
    organizationId: e.organizationId,
    dangerouslyOverrideSignerPublicKey: signerPublic,
  };
  const mnemonic = await decryptExportBundle({ ...args, returnMnemonic: true });
  check(mnemonic === e.mnemonic, `${what}: decryptExportBundle returns the mnemonic`);
  const asHex = await decryptExportBundle({ ...args, returnMnemonic: false });
  check(asHex === toHex(new TextEncoder().encode(e.mnemonic)), `${what}: decryptExportBundle returns the secret bytes`);
  // The ciphertext through an independent RFC 9180 implementation.
  const pt = await hpkeCoreOpen(e.clientPrivate, fromHex(data.encappedPublic), fromHex(data.ciphertext));
  check(new TextDecoder().decode(pt) === e.mnemonic, `${what}: @hpke/core open`);
  // Negative checks: the JS client refuses another pinned signer, the
  // production signer, another organization, altered signed data and
  // another client key.
  await mustReject(() => decryptExportBundle({ ...args, dangerouslyOverrideSignerPublicKey: otherSigner, returnMnemonic: true }), `${what} with another pinned signer`);
  await mustReject(() => decryptExportBundle({ ...args, dangerouslyOverrideSignerPublicKey: undefined, returnMnemonic: true }), `${what} against the production signer`);
  await mustReject(() => decryptExportBundle({ ...args, organizationId: "another-org", returnMnemonic: true }), `${what} for another organization`);
  const tampered = { ...env, data: env.data.slice(0, -2) + (env.data.endsWith("7d") ? "20" : "7d") };
  await mustReject(() => decryptExportBundle({ ...args, exportBundle: JSON.stringify(tampered), returnMnemonic: true }), `${what} with altered data`);
  await mustReject(() => decryptExportBundle({ ...args, embeddedKey: generateP256KeyPair().privateKey, returnMnemonic: true }), `${what} with another client key`);
  checked.push(what);
}
check(goVectors.exportBundles.length > 0, "go-vectors.json has export bundles");

// ---- 2. Values made by the JS side for Go to open. ----

// Client role: hpkeEncrypt + formatHpkeBuf (the body of
// encryptOtpCodeToBundle) to a JS-made target, with an uncompressed
// public_key as Grid's docs show.
{
  const target = generateP256KeyPair();
  const session = generateP256KeyPair();
  const pt = new TextEncoder().encode(JSON.stringify({ otp_code: "654321", public_key: session.publicKeyUncompressed }));
  const sealed = formatHpkeBuf(hpkeEncrypt({ plainTextBuf: pt, targetKeyBuf: fromHex(target.publicKeyUncompressed) }));
  jsOtp.push({
    name: "hpkeEncrypt/uncompressed-public-key",
    producer: "@turnkey/crypto hpkeEncrypt + formatHpkeBuf",
    targetPrivate: target.privateKey,
    otpCode: "654321",
    publicKey: session.publicKeyUncompressed,
    encryptedOtpBundle: sealed,
    expect: "ok",
  });
}

// Client role, non-ASCII code: the plaintext is UTF-8.
{
  const target = generateP256KeyPair();
  const session = generateP256KeyPair();
  const code = "\u0661\u0662\u0663\u0664\u0665\u0666";
  const pt = new TextEncoder().encode(JSON.stringify({ otp_code: code, public_key: session.publicKey }));
  const sealed = formatHpkeBuf(hpkeEncrypt({ plainTextBuf: pt, targetKeyBuf: fromHex(target.publicKeyUncompressed) }));
  jsOtp.push({
    name: "hpkeEncrypt/non-ascii-code",
    producer: "@turnkey/crypto hpkeEncrypt + formatHpkeBuf",
    targetPrivate: target.privateKey,
    otpCode: code,
    publicKey: session.publicKey,
    encryptedOtpBundle: sealed,
    expect: "ok",
  });
}

// Independent implementation: @hpke/core with the profile's AAD opens in Go;
// plain RFC 9180 without the AAD must not.
for (const withAad of [true, false]) {
  const target = generateP256KeyPair();
  const session = generateP256KeyPair();
  const pt = new TextEncoder().encode(JSON.stringify({ otp_code: "112233", public_key: session.publicKey }));
  const { enc, ct } = await hpkeCoreSeal(fromHex(target.publicKeyUncompressed), pt, withAad);
  jsOtp.push({
    name: withAad ? "hpke-core/with-aad" : "hpke-core/without-aad",
    producer: withAad ? "@hpke/core seal, AAD = enc || pkR" : "@hpke/core seal, no AAD (plain RFC 9180)",
    targetPrivate: target.privateKey,
    otpCode: "112233",
    publicKey: session.publicKey,
    encryptedOtpBundle: JSON.stringify({ encappedPublic: toHex(enc), ciphertext: toHex(ct) }),
    expect: withAad ? "ok" : "UNAUTHORIZED",
  });
}

// Known pitfall: @turnkey/crypto sealing to a compressed target key still
// "works" in JS but uses the 33-byte key in the KEM context and AAD, so no
// RFC 9180 receiver can open it.
{
  const target = generateP256KeyPair();
  const session = generateP256KeyPair();
  const pt = new TextEncoder().encode(JSON.stringify({ otp_code: "445566", public_key: session.publicKey }));
  const sealed = formatHpkeBuf(hpkeEncrypt({ plainTextBuf: pt, targetKeyBuf: fromHex(target.publicKey) }));
  jsOtp.push({
    name: "hpkeEncrypt/compressed-target",
    producer: "@turnkey/crypto hpkeEncrypt to a compressed target key",
    targetPrivate: target.privateKey,
    otpCode: "445566",
    publicKey: session.publicKey,
    encryptedOtpBundle: sealed,
    expect: "UNAUTHORIZED",
  });
}

// Server role: a session key sealed as the legacy flow does
// (hpkeEncrypt returns compressed enc || ciphertext; bs58check wraps it).
const jsSessionKeys = [];
for (let i = 0; i < 2; i++) {
  const client = generateP256KeyPair();
  const session = generateP256KeyPair();
  const raw = hpkeEncrypt({ plainTextBuf: fromHex(session.privateKey), targetKeyBuf: fromHex(client.publicKeyUncompressed) });
  const essk = bs58check.encode(raw);
  check(decryptCredentialBundle(essk, client.privateKey) === session.privateKey, "JS session key round trip");
  jsSessionKeys.push({
    name: `hpkeEncrypt/${i}`,
    producer: "@turnkey/crypto hpkeEncrypt + @turnkey/encoding bs58check.encode",
    clientPrivate: client.privateKey,
    sessionPrivate: session.privateKey,
    encryptedSessionSigningKey: essk,
  });
}
{
  const client = generateP256KeyPair();
  const session = generateP256KeyPair();
  const { enc, ct } = await hpkeCoreSeal(fromHex(client.publicKeyUncompressed), fromHex(session.privateKey));
  const essk = bs58check.encode(concat(compressRawPublicKey(enc), ct));
  check(decryptCredentialBundle(essk, client.privateKey) === session.privateKey, "@hpke/core session key opens in @turnkey/crypto");
  jsSessionKeys.push({
    name: "hpke-core",
    producer: "@hpke/core seal + compressRawPublicKey + bs58check.encode",
    clientPrivate: client.privateKey,
    sessionPrivate: session.privateKey,
    encryptedSessionSigningKey: essk,
  });
}
// The fixture published in @turnkey/crypto's own test suite (crypto-test.ts),
// checked here with the installed library.
{
  const fixture = {
    bundle: "w99a5xV6A75TfoAUkZn869fVyDYvgVsKrawMALZXmrauZd8hEv66EkPU1Z42CUaHESQjcA5bqd8dynTGBMLWB9ewtXWPEVbZvocB4Tw2K1vQVp7uwjf",
    embeddedKey: "20fa65df11f24833790ae283fc9a0c215eecbbc589549767977994dc69d05a56",
    plaintext: "67ee05fc3bdf4161bc70701c221d8d77180294cefcfcea64ba83c4d4c732fcb9",
  };
  check(decryptCredentialBundle(fixture.bundle, fixture.embeddedKey) === fixture.plaintext, "published credential bundle fixture");
  jsSessionKeys.push({
    name: "published-fixture",
    producer: "@turnkey/crypto test suite fixture (crypto-test.ts mockCredentialBundle)",
    clientPrivate: fixture.embeddedKey,
    sessionPrivate: fixture.plaintext,
    encryptedSessionSigningKey: fixture.bundle,
  });
}

const out = {
  comment:
    "Made by generate.mjs. encryptedOtpBundles and sessionKeys were produced by the JS libraries for Go to open " +
    "(expect: ok, or the error code Go must answer). goVectorsCheck records that every value of go-vectors.json " +
    "with that sha256 was accepted by @turnkey/crypto (and, for ciphertexts, by @hpke/core); its exportBundles " +
    "through decryptExportBundle with the Go signer key as dangerouslyOverrideSignerPublicKey.",
  packages: {
    node: process.versions.node,
    "@turnkey/crypto": pkgVersion("@turnkey/crypto"),
    "@turnkey/encoding": pkgVersion("@turnkey/encoding"),
    "@hpke/core": pkgVersion("@hpke/core"),
    "@noble/curves": pkgVersion("@noble/curves"),
  },
  encryptedOtpBundles: jsOtp,
  sessionKeys: jsSessionKeys,
  goVectorsCheck: {
    file: "go-vectors.json",
    sha256: createHash("sha256").update(goFile).digest("hex"),
    checked,
    result: "accepted",
  },
};
writeFileSync(join(here, "js-vectors.json"), JSON.stringify(out, null, 2) + "\n");
console.log(`checked ${checked.length} Go vectors; wrote ${jsOtp.length} OTP bundles and ${jsSessionKeys.length} session keys`);
