// End-to-end test of examples/server with the real JavaScript client
// libraries, the way a client team in another language uses the sandbox.
// e2e_test.go starts the server and runs:
//
//	node e2e.mjs <base URL, e.g. http://127.0.0.1:8089/2025-10-13>
//
// (npm ci first; WALLETGATE_CLIENT_ID and WALLETGATE_CLIENT_SECRET override
// the default sandbox credentials). Each step prints one line; the first
// failed check prints what was expected and what the server answered, and
// the script exits 1.
//
// Flows: a customer (platform API); an EMAIL_OTP login (code sealed with
// @turnkey/crypto, leg 2 stamped by @turnkey/api-key-stamper) and a session
// refresh whose encryptedSessionSigningKey @turnkey/crypto decrypts; a signed
// retry (wallet privacy) with its negative cases; a wallet export decrypted
// by @turnkey/crypto; ownership of an Ethereum wallet (ethers personal_sign)
// and a Solana wallet (tweetnacl + bs58); an OAUTH credential from an ID
// token signed by jose, its login and its revocation; a bank account with a
// transfer-in, a transfer-out as a signed retry (its payload checked before
// stamping), a quote and its signed execution, each under the
// Idempotency-Key rules (UUID keys, replay with Idempotent-Replayed, 409 for
// another request), and the single-transaction maximum; the sandbox's
// payout policy: a second customer pays out up to the daily limit and the
// next payout is refused, 403 PAYOUT_BLOCKED naming the rule, the window and
// when it has room again; a payout held for approval: a transfer-out of
// 888.88 USD answers 202 with a PayoutApproval, the session of the
// credential that signed it may not approve it (403), a session of a second
// (OAUTH) credential of the wallet approves it as a signed APPROVE_PAYOUT
// and the payout is made once (200 Transaction), a second approval 409;
// and, when
// WALLETGATE_WEBHOOK_PORT and WALLETGATE_WEBHOOK_KEY_FILE are set (the
// server's -webhook-url and -webhook-public-key), a webhook receiver on
// 127.0.0.1 that verifies every X-Grid-Signature with WebCrypto, answers 409
// to an id it has seen, and checks each account's events arrive in commit
// order; and, when WALLETGATE_EVM_SIMULATED=1 (the server's -evm-simulated),
// EVM contract accounts: an EIP-1271 wallet deployed through POST
// /sandbox/contract-wallets proven with its owner's ethers signMessage, and
// a counterfactual one (POST /sandbox/contract-wallets/counterfactual)
// proven with the owner's signature wrapped in ERC-6492 with ethers'
// AbiCoder, each after another party's signature was refused. Passkeys are not
// driven here (that needs a browser driver from npm, such as puppeteer);
// walletauth/passkey's TestChromiumVirtualAuthenticator (chromedp) covers them.

import { createHash, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import http from "node:http";
import { ApiKeyStamper } from "@turnkey/api-key-stamper";
import {
  decryptCredentialBundle,
  decryptExportBundle,
  encryptOtpCodeToBundle,
  generateP256KeyPair,
  getPublicKey,
} from "@turnkey/crypto";
import { uint8ArrayFromHexString as fromHex, uint8ArrayToHexString as toHex } from "@turnkey/encoding";
import { AbiCoder, Interface, Mnemonic, Wallet, concat, getAddress, hexlify, isAddress, randomBytes, verifyMessage } from "ethers";
import * as jose from "jose";
import nacl from "tweetnacl";
import bs58 from "bs58";

const base = (process.argv[2] || "").replace(/\/+$/, "");
if (!/^https?:\/\/.+\/2025-10-13$/.test(base)) {
  console.error("usage: node e2e.mjs <base URL ending in /2025-10-13>");
  process.exit(2);
}
const clientID = process.env.WALLETGATE_CLIENT_ID || "sandbox-client-id";
const clientSecret = process.env.WALLETGATE_CLIENT_SECRET || "sandbox-client-secret";
const basic = "Basic " + Buffer.from(`${clientID}:${clientSecret}`).toString("base64");

// Sandbox constants (README, "Sandbox constants").
const OTP_CODE = "000000";
const ORGANIZATION_ID = "org_sandbox";
const MNEMONIC = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";
const OIDC_ISSUER = "https://accounts.google.com";
const OIDC_AUDIENCE = "sandbox-client";
// The sandbox's payout policy (README, "Payout policy"): the payouts of a
// customer within any 24 hours total at most 100,000 USD, in USD cents; one
// payout is at most 50,000 USD (the single-transaction maximum).
const DAILY_LIMIT_USD_CENTS = 10_000_000;
const TRANSACTION_MAXIMUM_USD_CENTS = 5_000_000;

class CheckError extends Error {}

let step = "";
function check(cond, what, res) {
  if (!cond) {
    let msg = `${step}: ${what}`;
    if (res) msg += `\n  server answered ${res.method} ${res.path} -> HTTP ${res.status}: ${res.text}`;
    throw new CheckError(msg);
  }
}

function ok(line) {
  console.log(`ok   ${step}: ${line}`);
}

// call sends one request with the platform credentials and returns the
// status, headers, raw text and parsed JSON (or null).
async function call(method, path, body, headers = {}) {
  const init = { method, headers: { Authorization: basic, ...headers } };
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const r = await fetch(base + path, init);
  const text = await r.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    // not JSON; the checks report text
  }
  return { method, path, status: r.status, headers: r.headers, text, json };
}

function expectStatus(res, status, what) {
  check(res.status === status, `${what}: HTTP ${res.status}, want ${status}`, res);
  return res.json;
}

// expectError checks an error body ({"status", "code", "message",
// "details"?}): status, code and, when given, details.reason.
function expectError(res, status, code, what, reason) {
  check(res.status === status, `${what}: HTTP ${res.status}, want ${status} ${code}`, res);
  const e = res.json;
  check(e && e.status === status && e.code === code && typeof e.message === "string", `${what}: error body, want code ${code}`, res);
  if (reason !== undefined) {
    check(e.details && e.details.reason === reason, `${what}: details.reason ${JSON.stringify(e.details && e.details.reason)}, want ${JSON.stringify(reason)}`, res);
  }
}

// sessionKeyFromPrivate returns the P-256 key of a hex private scalar as
// @turnkey/api-key-stamper takes it (compressed public key).
function sessionKeyFromPrivate(privateKey) {
  return { privateKey, publicKey: toHex(getPublicKey(privateKey, true)) };
}

async function stamp(key, payload) {
  const stamper = new ApiKeyStamper({ apiPublicKey: key.publicKey, apiPrivateKey: key.privateKey });
  const { stampHeaderName, stampHeaderValue } = await stamper.stamp(payload);
  check(stampHeaderName === "X-Stamp", `stamper header name ${stampHeaderName}`);
  return stampHeaderValue;
}

// checkChallenge checks a 202 signed-retry challenge (README: payloadToSign,
// requestId, expiresAt, and type on auth operations only).
function checkChallenge(res, what, type) {
  const ch = expectStatus(res, 202, `${what} (first leg)`);
  check(ch && typeof ch.payloadToSign === "string" && ch.payloadToSign.length > 0, `${what}: 202 without payloadToSign`, res);
  check(/^Request:[0-9a-f-]{36}$/.test(ch.requestId), `${what}: requestId ${ch.requestId} is not Request:<uuid>`, res);
  const ttl = Date.parse(ch.expiresAt) - serverNow();
  check(ttl > 60_000 && ttl <= 5 * 60_000 + 5_000, `${what}: expiresAt ${ch.expiresAt} is not about 5 min ahead`, res);
  // type may be a list of the accepted values (see the refresh step).
  const types = Array.isArray(type) ? type : [type];
  check(types.includes(ch.type), `${what}: challenge type ${JSON.stringify(ch.type)}, want ${types.map((t) => JSON.stringify(t)).join(" or ")}`, res);
  JSON.parse(ch.payloadToSign); // the payload is JSON (stamped as the bytes, never re-serialised)
  return ch;
}

// signed runs a signed-retry operation: the first call, the stamp of
// payloadToSign by key, and the retry with the same body bytes.
async function signed(method, path, body, key, { what, type, status }) {
  const raw = body === undefined ? undefined : JSON.stringify(body);
  const ch = checkChallenge(await call(method, path, raw), what, type);
  const headers = { "Service-Wallet-Signature": await stamp(key, ch.payloadToSign), "Request-Id": ch.requestId };
  const res = await call(method, path, raw, headers);
  const out = expectStatus(res, status, `${what} (signed retry)`);
  return { out, ch, res };
}

async function main() {
  const started = Date.now();
  const receiver = await startReceiver();

  // 1. A customer, its embedded wallet and the wallet's EMAIL_OTP credential.
  step = "customer";
  const email = `ada.${Date.now()}@example.com`;
  let res = await call("POST", "/customers", { customerType: "INDIVIDUAL", fullName: "Ada Lovelace", email, birthDate: "1990-12-10", nationality: "GB" });
  const customer = expectStatus(res, 201, "POST /customers");
  check(/^Customer:/.test(customer.id) && customer.email === email, "customer id/email", res);
  const unauth = await fetch(base + "/customers/" + customer.id);
  check(unauth.status === 401, `GET without credentials: HTTP ${unauth.status}, want 401`);
  res = await call("GET", `/internal-accounts?customerId=${encodeURIComponent(customer.id)}`);
  const wallets = expectStatus(res, 200, "list internal accounts");
  check(Array.isArray(wallets.data) && wallets.data.length === 1, "one embedded wallet", res);
  const wallet = wallets.data[0];
  check(/^InternalAccount:/.test(wallet.id), "internal account id", res);
  res = await call("GET", `/auth/credentials?accountId=${encodeURIComponent(wallet.id)}`);
  const creds = expectStatus(res, 200, "list credentials");
  check(creds.data.length === 1 && creds.data[0].type === "EMAIL_OTP", "the wallet starts with one EMAIL_OTP credential", res);
  const emailCred = creds.data[0];
  check(/^AuthMethod:/.test(emailCred.id), "credential id is AuthMethod:<id>", res);
  ok(`${customer.id}, wallet ${wallet.id}, credential ${emailCred.type} ${emailCred.id}`);

  // 2. EMAIL_OTP login. The target bundle is signed by the sandbox's bundle
  // signing key, which examples/server logs at start (bundle_signing_key) and
  // the test hands over as WALLETGATE_SIGNING_KEY: every envelope below must
  // be signed by it.
  step = "otp-login";
  res = await call("POST", `/auth/credentials/${emailCred.id}/challenge`, {});
  const otpCh = expectStatus(res, 200, "OTP challenge");
  check(typeof otpCh.otpEncryptionTargetBundle === "string", "otpEncryptionTargetBundle", res);
  const envelope = JSON.parse(otpCh.otpEncryptionTargetBundle);
  const signer = process.env.WALLETGATE_SIGNING_KEY ?? "";
  check(/^04[0-9a-f]{128}$/.test(signer), `WALLETGATE_SIGNING_KEY ${signer} is not an uncompressed P-256 key`, res);
  check(envelope.enclaveQuorumPublic === signer, "the OTP target bundle names the logged signing key", res);
  const signedData = JSON.parse(new TextDecoder().decode(fromHex(envelope.data)));
  check(signedData.organizationId === ORGANIZATION_ID, `target bundle organizationId ${signedData.organizationId}`, res);
  const deviceKey = generateP256KeyPair();
  // A wrong code is refused on the first leg and counts as an attempt.
  const wrong = await encryptOtpCodeToBundle("123456", otpCh.otpEncryptionTargetBundle, deviceKey.publicKey, signer);
  res = await call("POST", `/auth/credentials/${emailCred.id}/verify`, { type: "EMAIL_OTP", encryptedOtpBundle: wrong });
  expectError(res, 401, "UNAUTHORIZED", "wrong OTP code", "Invalid OTP code");
  // encryptOtpCodeToBundle verifies the envelope against the pinned signer.
  const sealed = await encryptOtpCodeToBundle(OTP_CODE, otpCh.otpEncryptionTargetBundle, deviceKey.publicKey, signer);
  const session = sessionKeyFromPrivate(deviceKey.privateKey);
  const login = await signed("POST", `/auth/credentials/${emailCred.id}/verify`, { type: "EMAIL_OTP", encryptedOtpBundle: sealed }, session,
    { what: "OTP verify", type: "EMAIL_OTP", status: 200 });
  const otpSession = login.out;
  check(otpSession.id && otpSession.accountId === wallet.id && otpSession.type === "EMAIL_OTP", "AuthSession fields", login.res);
  check(!("encryptedSessionSigningKey" in otpSession), "an OTP session carries no encryptedSessionSigningKey", login.res);
  check(JSON.parse(login.ch.payloadToSign).requestId === login.ch.requestId, "payloadToSign names the requestId", login.res);
  ok(`session ${otpSession.id} with the device key ${session.publicKey.slice(0, 16)}… (a wrong code was 401 "Invalid OTP code")`);

  // Refresh the session: the new session key comes back sealed to a fresh
  // client key and @turnkey/crypto opens it.
  step = "session-refresh";
  const refreshTarget = generateP256KeyPair();
  // README: the 202 of a refresh carries no "type" (as the service's).
  const refresh = await signed("POST", `/auth/sessions/${otpSession.id}/refresh`, { clientPublicKey: refreshTarget.publicKeyUncompressed }, session,
    { what: "refresh", type: [undefined], status: 201 });
  const refreshed = refresh.out;
  check(refreshed.id && refreshed.id !== otpSession.id && refreshed.accountId === wallet.id, "refreshed session", refresh.res);
  check(typeof refreshed.encryptedSessionSigningKey === "string", "encryptedSessionSigningKey on refresh", refresh.res);
  const refreshedKey = sessionKeyFromPrivate(decryptCredentialBundle(refreshed.encryptedSessionSigningKey, refreshTarget.privateKey));
  res = await call("GET", `/auth/sessions?accountId=${encodeURIComponent(wallet.id)}`);
  const sessions = expectStatus(res, 200, "list sessions");
  check(sessions.data.some((s) => s.id === refreshed.id) && sessions.data.some((s) => s.id === otpSession.id), "both sessions active", res);
  ok(`session ${refreshed.id}, key ${refreshedKey.publicKey.slice(0, 16)}… decrypted by decryptCredentialBundle`);

  // 3. A signed retry (wallet privacy), stamped with the refreshed session's
  // key, and what the service must refuse around it.
  step = "signed-retry";
  const privPath = `/internal-accounts/${wallet.id}`;
  const privBody = JSON.stringify({ privateEnabled: true });
  const ch = checkChallenge(await call("PATCH", privPath, privBody), "privacy", undefined);
  const payload = JSON.parse(ch.payloadToSign);
  check(payload.requestId === ch.requestId, "payloadToSign carries the requestId", null);
  const goodStamp = await stamp(refreshedKey, ch.payloadToSign);
  res = await call("PATCH", privPath, privBody, { "Request-Id": ch.requestId });
  expectError(res, 401, "WALLET_SIGNATURE_MISSING", "retry without Service-Wallet-Signature");
  res = await call("PATCH", privPath, privBody, { "Service-Wallet-Signature": goodStamp });
  expectError(res, 401, "REQUEST_ID_MISSING", "retry without Request-Id");
  res = await call("PATCH", privPath, JSON.stringify({ privateEnabled: false }), { "Service-Wallet-Signature": goodStamp, "Request-Id": ch.requestId });
  expectError(res, 401, "WALLET_SIGNATURE_BODY_MISMATCH", "retry with another body");
  const stranger = sessionKeyFromPrivate(generateP256KeyPair().privateKey);
  res = await call("PATCH", privPath, privBody, { "Service-Wallet-Signature": await stamp(stranger, ch.payloadToSign), "Request-Id": ch.requestId });
  expectError(res, 401, "WALLET_SIGNATURE_INVALID", "retry stamped by a key without a session");
  res = await call("PATCH", privPath, privBody, { "Service-Wallet-Signature": await stamp(refreshedKey, ch.payloadToSign + " "), "Request-Id": ch.requestId });
  check(res.status === 401, `retry stamped over altered payload bytes: HTTP ${res.status}, want 401`, res);
  // Key order and whitespace of the body may differ (README); the failures
  // above left the request usable.
  res = await call("PATCH", privPath, '{ "privateEnabled" : true }', { "Service-Wallet-Signature": goodStamp, "Request-Id": ch.requestId });
  const updated = expectStatus(res, 200, "privacy signed retry");
  check(updated.id === wallet.id && updated.privateEnabled === true, "privateEnabled is true", res);
  res = await call("PATCH", privPath, privBody, { "Service-Wallet-Signature": goodStamp, "Request-Id": ch.requestId });
  expectError(res, 401, "UNAUTHORIZED", "reused requestId");
  res = await call("GET", privPath);
  check(expectStatus(res, 200, "GET internal account").privateEnabled === true, "privateEnabled persisted", res);
  ok(`PATCH privacy 202 -> 200 privateEnabled=true; missing stamp, missing Request-Id, other body, foreign key, altered payload and reuse were 401`);

  // 4. Wallet export, sealed to a fresh client key, the envelope verified
  // against the pinned signer by @turnkey/crypto.
  step = "export";
  const exportKey = generateP256KeyPair();
  const exp = await signed("POST", `/internal-accounts/${wallet.id}/export`, { clientPublicKey: exportKey.publicKeyUncompressed }, refreshedKey,
    { what: "export", type: undefined, status: 200 });
  const bundle = exp.out.encryptedWalletCredentials;
  check(typeof bundle === "string", "encryptedWalletCredentials", exp.res);
  const exportEnvelope = JSON.parse(bundle);
  check(exportEnvelope.enclaveQuorumPublic === signer, "the export is signed by the key that signed the OTP target bundle", exp.res);
  const args = { exportBundle: bundle, embeddedKey: exportKey.privateKey, organizationId: ORGANIZATION_ID, dangerouslyOverrideSignerPublicKey: signer };
  const mnemonic = await decryptExportBundle({ ...args, returnMnemonic: true });
  check(mnemonic === MNEMONIC, `decrypted mnemonic ${JSON.stringify(mnemonic)}`);
  check(Mnemonic.isValidMnemonic(mnemonic), "the mnemonic is valid BIP-39");
  const derived = Wallet.fromPhrase(mnemonic).address;
  let refused = false;
  try {
    await decryptExportBundle({ ...args, organizationId: "another-org", returnMnemonic: true });
  } catch {
    refused = true;
  }
  check(refused, "decryptExportBundle accepted another organizationId");
  ok(`export 202 -> 200, ${mnemonic.split(" ").length}-word mnemonic decrypted by decryptExportBundle (m/44'/60'/0'/0/0 ${derived})`);

  // 5. Ownership of self-custody wallets.
  step = "ownership-ethereum";
  const eth = Wallet.createRandom();
  const ethAcct = await proveOwnership(customer.id, "ETHEREUM_WALLET", eth.address, async (msg) => {
    const sig = await eth.signMessage(msg);
    check(verifyMessage(msg, sig) === eth.address, "ethers verifies its own signature");
    return sig;
  });
  ok(`${ethAcct.id} (${eth.address}) ACTIVE after personal_sign`);

  step = "ownership-solana";
  const sol = nacl.sign.keyPair();
  const solAddress = bs58.encode(sol.publicKey);
  const solSign = (msg) => bs58.encode(nacl.sign.detached(new TextEncoder().encode(msg), sol.secretKey));
  const solAcct = await proveOwnership(customer.id, "SOLANA_WALLET", solAddress, solSign, async (path) => {
    // A signature by another key: 400 and the account becomes UNVERIFIED;
    // a new challenge is needed.
    const other = nacl.sign.keyPair();
    let r = await call("POST", `${path}/challenge`, { method: "WALLET_SIGNATURE" });
    const c = expectStatus(r, 201, "first challenge");
    r = await call("POST", `${path}/verify`, { signature: bs58.encode(nacl.sign.detached(new TextEncoder().encode(c.messageToSign), other.secretKey)) });
    expectError(r, 400, "INVALID_INPUT", "verify with a foreign signature");
    r = await call("GET", path);
    check(expectStatus(r, 200, "GET after the failure").status === "UNVERIFIED", "status UNVERIFIED after a bad signature", r);
    r = await call("POST", `${path}/verify`, { signature: solSign(c.messageToSign) });
    expectError(r, 409, "CONFLICT", "verify without an outstanding challenge");
  });
  ok(`${solAcct.id} (${solAddress}) ACTIVE after signMessage (a foreign signature made it UNVERIFIED first)`);

  if (process.env.WALLETGATE_EVM_SIMULATED === "1") {
    await contractWallets(customer.id, receiver);
  } else {
    console.log("skip contract-wallets: start the server with -evm-simulated and set WALLETGATE_EVM_SIMULATED=1");
  }

  // 6. OAUTH: an ID token signed by jose. The sandbox does not check the
  // signature (README: "the signature may be a dummy") and examples/server
  // cannot be given an issuer or JWKS, so this exercises the claims and the
  // nonce binding, not signature verification.
  step = "oauth";
  const { privateKey: idpKey } = await jose.generateKeyPair("RS256");
  const sub = `10${Date.now()}`;
  const oauthEmail = "ada.lovelace@gmail.example";
  const idToken = (extra) =>
    new jose.SignJWT({ email: oauthEmail, ...extra })
      .setProtectedHeader({ alg: "RS256", kid: "e2e-test", typ: "JWT" })
      .setIssuer(OIDC_ISSUER)
      .setAudience(OIDC_AUDIENCE)
      .setSubject(sub)
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(idpKey);
  const add = await signed("POST", "/auth/credentials", { type: "OAUTH", accountId: wallet.id, oidcToken: await idToken({}) }, session,
    { what: "add OAUTH", type: "OAUTH", status: 201 });
  const oauthCred = add.out;
  check(/^AuthMethod:/.test(oauthCred.id) && oauthCred.type === "OAUTH" && oauthCred.nickname === oauthEmail, "OAUTH AuthMethod, nickname from the email claim", add.res);
  const loginKey = generateP256KeyPair();
  const nonce = createHash("sha256").update(loginKey.publicKey).digest("hex");
  res = await call("POST", `/auth/credentials/${oauthCred.id}/verify`, { type: "OAUTH", oidcToken: await idToken({}), clientPublicKey: loginKey.publicKey });
  expectError(res, 401, "UNAUTHORIZED", "OAUTH verify without nonce");
  res = await call("POST", `/auth/credentials/${oauthCred.id}/verify`, { type: "OAUTH", oidcToken: await idToken({ nonce: "0".repeat(64) }), clientPublicKey: loginKey.publicKey });
  expectError(res, 401, "UNAUTHORIZED", "OAUTH verify with another nonce");
  res = await call("POST", `/auth/credentials/${oauthCred.id}/verify`, { type: "OAUTH", oidcToken: "sandbox-valid-oidc-token", clientPublicKey: loginKey.publicKey });
  expectError(res, 400, "INVALID_INPUT", "legacy OIDC literal");
  res = await call("POST", `/auth/credentials/${oauthCred.id}/verify`, { type: "OAUTH", oidcToken: await idToken({ nonce }), clientPublicKey: loginKey.publicKey });
  const oauthSession = expectStatus(res, 200, "OAUTH verify");
  check(oauthSession.type === "OAUTH" && typeof oauthSession.encryptedSessionSigningKey === "string", "OAUTH AuthSession with encryptedSessionSigningKey", res);
  const oauthKey = sessionKeyFromPrivate(decryptCredentialBundle(oauthSession.encryptedSessionSigningKey, loginKey.privateKey));
  // The OAUTH session key signs: privacy back off.
  const off = await signed("PATCH", privPath, { privateEnabled: false }, oauthKey, { what: "privacy with the OAUTH session", type: undefined, status: 200 });
  check(off.out.privateEnabled === false, "privateEnabled is false", off.res);
  // Revoking the OAUTH credential needs a session of another credential.
  const del = await call("DELETE", `/auth/credentials/${oauthCred.id}`);
  const delCh = checkChallenge(del, "revoke OAUTH", "OAUTH");
  res = await call("DELETE", `/auth/credentials/${oauthCred.id}`, undefined, { "Service-Wallet-Signature": await stamp(oauthKey, delCh.payloadToSign), "Request-Id": delCh.requestId });
  check(res.status === 401, `revoke stamped by the credential's own session: HTTP ${res.status}, want 401`, res);
  res = await call("DELETE", `/auth/credentials/${oauthCred.id}`, undefined, { "Service-Wallet-Signature": await stamp(session, delCh.payloadToSign), "Request-Id": delCh.requestId });
  check(res.status === 204 && res.text === "", `revoke: HTTP ${res.status}, want 204 without a body`, res);
  res = await call("GET", `/auth/credentials?accountId=${encodeURIComponent(wallet.id)}`);
  check(expectStatus(res, 200, "list credentials").data.every((c) => c.id !== oauthCred.id), "OAUTH credential gone", res);
  res = await call("GET", `/auth/sessions?accountId=${encodeURIComponent(wallet.id)}`);
  check(expectStatus(res, 200, "list sessions").data.every((s) => s.id !== oauthSession.id), "the OAUTH session was revoked with its credential", res);
  ok(`credential ${oauthCred.id} (${oauthCred.nickname}) added, login with nonce=sha256(clientPublicKey) -> session key decrypted and used, revoked 204`);

  await moneyMovement(customer, wallet, refreshedKey, receiver);
  await dailyLimit();
  await payoutApproval();
  if (receiver) {
    await checkWebhooks(receiver, { wallet, ethAcct, solAcct, ethAddress: eth.address, solAddress, oauthCred, otpSession, refreshed });
  } else {
    console.log("skip webhooks: set WALLETGATE_WEBHOOK_PORT and WALLETGATE_WEBHOOK_KEY_FILE (the server's -webhook-url and -webhook-public-key)");
  }

  step = "passkey";
  console.log(`skip ${step}: needs a browser driver from npm; the Go test TestChromiumVirtualAuthenticator (walletauth/passkey, chromedp) covers passkeys`);

  console.log(`all flows passed in ${Date.now() - started} ms`);
}

// canonical is the canonical JSON of a value made of objects, arrays,
// strings and safe integers: members sorted by name (UTF-16 code units, the
// order of Array.prototype.sort), no whitespace. bodySha256 is the SHA-256
// of it.
function canonical(v) {
  if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
  if (v !== null && typeof v === "object") {
    return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + canonical(v[k])).join(",") + "}";
  }
  return JSON.stringify(v);
}

// sameJSON reports whether two JSON values are equal (member order aside).
const sameJSON = (a, b) => canonical(a) === canonical(b);

// checkPayload is the safe pattern of a client that stamps: parse the
// payloadToSign and check that it names the operation, the wallet, the
// parameters and the body this client sent, before stamping anything.
function checkPayload(ch, want, res) {
  const p = JSON.parse(ch.payloadToSign);
  check(p.type === want.type, `payload type ${p.type}, want ${want.type}`, res);
  check(p.accountId === want.accountId, `payload accountId ${p.accountId}, want ${want.accountId}`, res);
  check(p.requestId === ch.requestId, "payload requestId", res);
  check(sameJSON(p.parameters, want.parameters), `payload parameters ${JSON.stringify(p.parameters)}, want ${JSON.stringify(want.parameters)}`, res);
  const digest = createHash("sha256").update(want.body === undefined ? "" : canonical(want.body)).digest("hex");
  check(p.bodySha256 === digest, `payload bodySha256 ${p.bodySha256}, want ${digest}`, res);
  check(Date.parse(p.expiresAt) > serverNow(), "payload not expired", res);
  return p;
}

// expectKeyRefused checks the answer to a key that is not a UUID: 400
// INVALID_INPUT naming the header.
function expectKeyRefused(res, what) {
  expectError(res, 400, "INVALID_INPUT", `${what} with a key that is not a UUID`);
  check(res.json.details && res.json.details.field === "Idempotency-Key", `${what}: details.field ${JSON.stringify(res.json.details)}, want Idempotency-Key`, res);
}

// expectReplay checks a replayed answer: the status of the first, the
// Idempotent-Replayed header, the same record.
function expectReplay(res, status, first, what) {
  const out = expectStatus(res, status, `${what} repeated with its key`);
  check(res.headers.get("idempotent-replayed") === "true", `${what}: Idempotent-Replayed ${res.headers.get("idempotent-replayed")}, want true`, res);
  check(out.id === first.id, `${what}: the repeat answered ${out.id}, want the first ${first.id}`, res);
  return out;
}

// usdBalance reads a wallet's balance in cur.
async function balance(walletId, cur) {
  const res = await call("GET", `/internal-accounts/${walletId}`);
  const a = expectStatus(res, 200, "GET internal account");
  const m = (a.balances || []).find((b) => b.currency === cur);
  return m ? m.amount : 0;
}

// moneyMovement drives transfers and a quote from the README's "Transfers
// and quotes", "Idempotency-Key" and "The payout gate": amounts in the
// smallest unit of the external account's currency.
async function moneyMovement(customer, wallet, key, receiver) {
  // Registration fails closed: a currency outside the sandbox's table, and
  // a vaspName that is a directory name only once trimmed, are refused.
  step = "registration-refusals";
  const fieldsOf = (r) => (r.json.details?.errors || []).map((e) => e.field).join(",");
  let res = await call("POST", "/customers/external-accounts", {
    customerId: customer.id, currency: "XYZ",
    accountInfo: { accountType: "USD_ACCOUNT", accountNumber: "77001299", routingNumber: "021000021",
      beneficiary: { beneficiaryType: "INDIVIDUAL", fullName: "Ada Lovelace" } },
  });
  expectError(res, 400, "INVALID_INPUT", "register an account in XYZ");
  check(fieldsOf(res) === "currency", `the XYZ refusal names ${fieldsOf(res)}, want currency`, res);
  for (const vaspName of [" Coinbase", "Coinbase\n", "coinbase"]) {
    res = await call("POST", "/customers/external-accounts", {
      customerId: customer.id, currency: "USDC", ownershipType: "FIRST_PARTY",
      accountInfo: { accountType: "ETHEREUM_WALLET", address: "0x52908400098527886E0F7030069857D2E4169EE7", vaspName },
    });
    expectError(res, 400, "INVALID_INPUT", `register a custodial wallet of ${JSON.stringify(vaspName)}`);
    check(fieldsOf(res) === "accountInfo.vaspName", `the vaspName refusal names ${fieldsOf(res)}`, res);
  }
  ok("a currency outside the table (XYZ) and inexact vaspNames are 400 naming the field");

  step = "transfer-in";
  res = await call("POST", "/customers/external-accounts", {
    customerId: customer.id, currency: "USD",
    accountInfo: { accountType: "USD_ACCOUNT", accountNumber: "77001201", routingNumber: "021000021",
      beneficiary: { beneficiaryType: "INDIVIDUAL", fullName: "Ada Lovelace" } },
  });
  const bank = expectStatus(res, 201, "register a USD bank account");
  check(bank.status === "ACTIVE", `a bank account starts ${bank.status}, want ACTIVE`, res);
  if (receiver) receiver.expect(bank.id, ["ACTIVE", "INACTIVE"]);
  const inBody = { source: { accountId: bank.id }, destination: { accountId: wallet.id }, amount: 10_000 }; // 100.00 USD
  res = await call("POST", "/transfer-in", inBody, { "Idempotency-Key": "transfer-in-1" });
  expectKeyRefused(res, "transfer-in");
  const inKey = randomUUID();
  res = await call("POST", "/transfer-in", inBody, { "Idempotency-Key": inKey });
  const tin = expectStatus(res, 201, "transfer-in");
  check(!res.headers.has("idempotent-replayed"), "a first answer is not marked replayed", res);
  check(tin.status === "COMPLETED" && tin.sentAmount.amount === 10_000 && tin.sentAmount.currency === "USD", "transfer-in of 10000 USD cents completed", res);
  // Member order does not make another request.
  expectReplay(await call("POST", "/transfer-in", JSON.stringify({ amount: 10_000, destination: { accountId: wallet.id }, source: { accountId: bank.id } }),
    { "Idempotency-Key": inKey.toUpperCase() }), 201, tin, "transfer-in");
  res = await call("POST", "/transfer-in", { ...inBody, amount: 10_001 }, { "Idempotency-Key": inKey });
  expectError(res, 409, "CONFLICT", "another transfer-in under the key");
  check(await balance(wallet.id, "USD") === 10_000, "the wallet holds 10000 USD cents once");
  ok(`${tin.id} 201; the repeat replayed it (Idempotent-Replayed: true), another body under the key was 409, a non-UUID key 400`);

  step = "transfer-out";
  const outBody = { source: { accountId: wallet.id }, destination: { accountId: bank.id }, amount: 2_500 };
  res = await call("POST", "/transfer-out", outBody, { "Idempotency-Key": "not-a-uuid" });
  expectKeyRefused(res, "transfer-out");
  res = await call("POST", "/transfer-out", { ...outBody, amount: 5_000_001 });
  expectError(res, 400, "TRANSACTION_SIZE_LIMIT_EXCEEDED", "transfer-out above the USD maximum (first leg)");
  check(res.json.details.field === "destination.accountId", "the size refusal names destination.accountId", res);
  const outKey = randomUUID();
  const raw = JSON.stringify(outBody);
  res = await call("POST", "/transfer-out", raw, { "Idempotency-Key": outKey });
  const ch = checkChallenge(res, "transfer-out", undefined);
  checkPayload(ch, { type: "TRANSFER_OUT", accountId: wallet.id, body: outBody,
    parameters: { sourceAccountId: wallet.id, destinationAccountId: bank.id, amount: 2_500, currency: "USD" } }, res);
  res = await call("POST", "/transfer-out", raw, { "Idempotency-Key": outKey, "Service-Wallet-Signature": await stamp(key, ch.payloadToSign), "Request-Id": ch.requestId });
  const tout = expectStatus(res, 201, "transfer-out (signed retry)");
  check(tout.status === "COMPLETED" && tout.sentAmount.amount === 2_500 && tout.destination.accountId === bank.id, "transfer-out of 2500 USD cents completed", res);
  // The key now replays the 201, to an unsigned repeat too.
  expectReplay(await call("POST", "/transfer-out", raw, { "Idempotency-Key": outKey }), 201, tout, "transfer-out");
  res = await call("POST", "/transfer-out", { ...outBody, amount: 2_501 }, { "Idempotency-Key": outKey });
  expectError(res, 409, "CONFLICT", "another transfer-out under the key");
  check(await balance(wallet.id, "USD") === 7_500, "the wallet holds 7500 USD cents after one transfer-out");
  ok(`${tout.id}: 202 TRANSFER_OUT payload checked, stamped, 201, replayed under its key; 5000001 cents was TRANSACTION_SIZE_LIMIT_EXCEEDED`);

  step = "quote";
  res = await call("POST", `/sandbox/internal-accounts/${wallet.id}/fund`, { amount: 5_000_000 }); // 5 USDB
  expectStatus(res, 200, "fund the wallet");
  const qBody = { source: { accountId: wallet.id }, destination: { accountId: bank.id }, lockedCurrencySide: "SENDING", lockedCurrencyAmount: 1_000_000 };
  res = await call("POST", "/quotes", qBody, { "Idempotency-Key": "quote-1" });
  expectKeyRefused(res, "POST /quotes");
  const qKey = randomUUID();
  res = await call("POST", "/quotes", qBody, { "Idempotency-Key": qKey });
  const quote = expectStatus(res, 201, "POST /quotes");
  check(quote.sendingCurrency === "USDB" && quote.receivingCurrency === "USD" && quote.totalSendingAmount === 1_000_000 && quote.totalReceivingAmount === 100,
    "1 USDB (1000000 smallest units) buys 100 USD cents", res);
  expectReplay(await call("POST", "/quotes", qBody, { "Idempotency-Key": qKey }), 201, quote, "POST /quotes");
  res = await call("POST", "/quotes", { ...qBody, lockedCurrencyAmount: 1_000_001 }, { "Idempotency-Key": qKey });
  expectError(res, 409, "CONFLICT", "another quote under the key");
  const exec = `/quotes/${quote.id}/execute`;
  res = await call("POST", exec, undefined, { "Idempotency-Key": "exec-1" });
  expectKeyRefused(res, "execute");
  const xKey = randomUUID();
  res = await call("POST", exec, undefined, { "Idempotency-Key": xKey });
  const xch = checkChallenge(res, "execute", undefined);
  checkPayload(xch, { type: "EXECUTE_QUOTE", accountId: wallet.id, parameters: { quoteId: quote.id, sourceAccountId: wallet.id,
    amount: 1_000_000, currency: "USDB", destinationAccountId: bank.id, receivingAmount: 100, receivingCurrency: "USD",
    exchangeRate: quote.exchangeRate, fees: 0 } }, res);
  res = await call("POST", exec, undefined, { "Idempotency-Key": xKey, "Service-Wallet-Signature": await stamp(key, xch.payloadToSign), "Request-Id": xch.requestId });
  const done = expectStatus(res, 200, "execute (signed retry)");
  check(done.id === quote.id && typeof done.transactionId === "string", "executed quote names its transaction", res);
  const again = expectReplay(await call("POST", exec, undefined, { "Idempotency-Key": xKey }), 200, done, "execute");
  check(again.transactionId === done.transactionId, "the replay names the same transaction", res);
  check(await balance(wallet.id, "USDB") === 4_000_000, "one execution debited 1 USDB");
  ok(`${quote.id} 201 (replayed under its key), executed once as ${done.transactionId} (EXECUTE_QUOTE payload checked, replayed under its key)`);

  // Deleting the account writes its INACTIVE event (the webhooks step).
  step = "delete-account";
  res = await call("DELETE", `/customers/external-accounts/${bank.id}`);
  check(res.status === 204, `delete: HTTP ${res.status}, want 204`, res);
  res = await call("GET", `/customers/external-accounts/${bank.id}`);
  expectError(res, 404, "REFERENCE_NOT_FOUND", "a deleted account");
  ok(`${bank.id} deleted (204, then 404)`);
}

// otpLogin logs in with the EMAIL_OTP credential credId (code sealed with
// @turnkey/crypto to the envelope signed by the pinned bundle signing key)
// and returns the session key.
async function otpLogin(credId) {
  const signer = process.env.WALLETGATE_SIGNING_KEY ?? "";
  const res = await call("POST", `/auth/credentials/${credId}/challenge`, {});
  const c = expectStatus(res, 200, "OTP challenge");
  const device = generateP256KeyPair();
  const sealed = await encryptOtpCodeToBundle(OTP_CODE, c.otpEncryptionTargetBundle, device.publicKey, signer);
  const key = sessionKeyFromPrivate(device.privateKey);
  await signed("POST", `/auth/credentials/${credId}/verify`, { type: "EMAIL_OTP", encryptedOtpBundle: sealed }, key,
    { what: "OTP verify", type: "EMAIL_OTP", status: 200 });
  return key;
}

// fundedCustomer makes a customer named name, logs its wallet in over
// EMAIL_OTP, registers a USD bank account with accountNumber and funds the
// wallet with usdCents USD cents.
async function fundedCustomer(name, emailUser, accountNumber, usdCents) {
  let res = await call("POST", "/customers", { customerType: "INDIVIDUAL", fullName: name, email: `${emailUser}.${Date.now()}@example.com` });
  const customer = expectStatus(res, 201, "POST /customers");
  res = await call("GET", `/internal-accounts?customerId=${encodeURIComponent(customer.id)}`);
  const wallet = expectStatus(res, 200, "list internal accounts").data[0];
  res = await call("GET", `/auth/credentials?accountId=${encodeURIComponent(wallet.id)}`);
  const key = await otpLogin(expectStatus(res, 200, "list credentials").data[0].id);
  res = await call("POST", "/customers/external-accounts", {
    customerId: customer.id, currency: "USD",
    accountInfo: { accountType: "USD_ACCOUNT", accountNumber, routingNumber: "021000021",
      beneficiary: { beneficiaryType: "INDIVIDUAL", fullName: name } },
  });
  const bank = expectStatus(res, 201, "register a USD bank account");
  res = await call("POST", `/sandbox/internal-accounts/${wallet.id}/fund`, { amount: usdCents, currency: "USD" });
  expectStatus(res, 200, `fund the wallet with ${usdCents} USD cents`);
  return { customer, wallet, key, bank };
}

// dailyLimit drives the README's "Payout policy": a new customer funds its
// wallet, pays out the daily limit in two transfers of the
// single-transaction maximum, and the next payout, one cent, is refused on
// its signed retry with 403 PAYOUT_BLOCKED naming the rule (daily-limit),
// the window (customer-day) and when the window has room again
// (availableAt, 24 hours after the first payout); nothing is debited.
async function dailyLimit() {
  step = "daily-limit";
  const { customer, wallet, key, bank } = await fundedCustomer("Grace Hopper", "grace", "88001201", DAILY_LIMIT_USD_CENTS + 100);
  let res;
  // pay sends a transfer-out of amount USD cents: the first leg's
  // challenge, checked, then the stamped retry, whose answer it returns.
  const pay = async (amount) => {
    const body = { source: { accountId: wallet.id }, destination: { accountId: bank.id }, amount };
    const raw = JSON.stringify(body);
    const r = await call("POST", "/transfer-out", raw);
    const ch = checkChallenge(r, `transfer-out of ${amount}`, undefined);
    checkPayload(ch, { type: "TRANSFER_OUT", accountId: wallet.id, body,
      parameters: { sourceAccountId: wallet.id, destinationAccountId: bank.id, amount, currency: "USD" } }, r);
    return call("POST", "/transfer-out", raw, { "Service-Wallet-Signature": await stamp(key, ch.payloadToSign), "Request-Id": ch.requestId });
  };
  const paid = [];
  for (let total = 0; total < DAILY_LIMIT_USD_CENTS; total += TRANSACTION_MAXIMUM_USD_CENTS) {
    res = await pay(TRANSACTION_MAXIMUM_USD_CENTS);
    paid.push(expectStatus(res, 201, `transfer-out of ${TRANSACTION_MAXIMUM_USD_CENTS} USD cents within the daily limit`));
  }
  check(await balance(wallet.id, "USD") === 100, "the wallet holds 100 USD cents after paying out the daily limit");
  // The first leg answers a challenge: the policy decides on the signed
  // retry, in the transaction that consumes it.
  res = await pay(1);
  expectError(res, 403, "PAYOUT_BLOCKED", "one cent past the daily limit");
  const d = res.json.details || {};
  check(d.rule === "daily-limit" && d.window === "customer-day" && typeof d.reason === "string",
    `details ${JSON.stringify(d)}, want rule daily-limit, window customer-day and a reason`, res);
  check(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/.test(d.availableAt), `details.availableAt ${d.availableAt} is not an RFC 3339 UTC time`, res);
  const wait = Date.parse(d.availableAt) - Date.parse(paid[0].createdAt);
  check(Math.abs(wait - 24 * 3600_000) < 5_000, `availableAt ${d.availableAt} is not 24 hours after the first payout (${paid[0].createdAt})`, res);
  check(await balance(wallet.id, "USD") === 100, "the refused payout debited nothing");
  ok(`${paid.length} transfer-outs of ${TRANSACTION_MAXIMUM_USD_CENTS} USD cents paid; one more cent was 403 PAYOUT_BLOCKED (rule ${d.rule}, window ${d.window}, availableAt ${d.availableAt}), nothing debited`);
}

// APPROVAL_USD_CENTS is the sandbox's approval amount
// (sandbox.ApprovalPayoutUSDCents): a transfer-out worth exactly 888.88
// USD waits for an approval.
const APPROVAL_USD_CENTS = 88_888;

// sandboxNow is the simulator's time in seconds (GET /sandbox/clock): ID
// tokens must be issued near it, since it checks iat against its clock,
// which POST /sandbox/clock/advance moves.
async function sandboxNow() {
  const res = await call("GET", "/sandbox/clock");
  return Math.floor(Date.parse(expectStatus(res, 200, "GET /sandbox/clock").now) / 1000);
}

// clockOffsetMs is how far the test moved the simulator's clock ahead of
// this machine's; serverNow is the simulator's time, in milliseconds, as
// the client judges expiries against it.
let clockOffsetMs = 0;
function serverNow() { return Date.now() + clockOffsetMs; }

// advanceClock moves the simulator's clock by seconds.
async function advanceClock(seconds) {
  const res = await call("POST", "/sandbox/clock/advance", { seconds });
  const out = expectStatus(res, 200, `advance the sandbox clock by ${seconds} s`);
  clockOffsetMs += seconds * 1000;
  return out;
}

// oauthIdentity is an OpenID identity of the test's own issuer key: its
// token(extra) is an ID token signed by jose, issued at the simulator's
// now.
async function oauthIdentity(email) {
  const { privateKey: idpKey } = await jose.generateKeyPair("RS256");
  const sub = `20${Date.now()}`;
  const token = async (extra) => {
    const now = await sandboxNow();
    return new jose.SignJWT({ email, ...extra })
      .setProtectedHeader({ alg: "RS256", kid: "e2e-test", typ: "JWT" })
      .setIssuer(OIDC_ISSUER)
      .setAudience(OIDC_AUDIENCE)
      .setSubject(sub)
      .setIssuedAt(now)
      .setExpirationTime(now + 3600)
      .sign(idpKey);
  };
  return { token };
}

// oauthAdd adds the identity id as an OAUTH credential of the wallet,
// signed by key, a session of another credential, and returns it.
async function oauthAdd(walletId, key, id) {
  const add = await signed("POST", "/auth/credentials", { type: "OAUTH", accountId: walletId, oidcToken: await id.token({}) }, key,
    { what: "add OAUTH", type: "OAUTH", status: 201 });
  return add.out;
}

// oauthSession logs in with the OAUTH credential cred of identity id
// (nonce = sha256(clientPublicKey)) and returns the session key
// @turnkey/crypto decrypts.
async function oauthSession(cred, id) {
  const loginKey = generateP256KeyPair();
  const nonce = createHash("sha256").update(loginKey.publicKey).digest("hex");
  const res = await call("POST", `/auth/credentials/${cred.id}/verify`, { type: "OAUTH", oidcToken: await id.token({ nonce }), clientPublicKey: loginKey.publicKey });
  const sess = expectStatus(res, 200, "OAUTH verify");
  return sessionKeyFromPrivate(decryptCredentialBundle(sess.encryptedSessionSigningKey, loginKey.privateKey));
}

// payoutApproval drives the README's "Payout approvals" and "Assurance of
// credentials": a new customer's transfer-out of exactly 888.88 USD,
// signed by its EMAIL_OTP session, is held (202 PayoutApproval,
// distinguishable from a challenge: no payloadToSign; nothing debited);
// approving it is a signed APPROVE_PAYOUT of the wallet naming the payout,
// refused (403 FORBIDDEN) when stamped by the session that signed the
// payout and by a session of an OAUTH credential that session enrolled
// just now (a credential enrolled by a weaker session is no second
// credential until its security-change period ends). The test moves the
// sandbox's clock a day (POST /sandbox/clock/advance): the first approval
// has expired, a new payout is held, and the OAUTH credential, now a
// credential of its own, approves it (200 Transaction, debited once);
// approving again is 409 CONFLICT.
async function payoutApproval() {
  step = "payout-approval";
  const funded = 200_000;
  const { customer, wallet, key, bank } = await fundedCustomer("Katherine Johnson", "katherine", "88002201", funded);
  let res;
  const id = await oauthIdentity("katherine.johnson@gmail.example");
  const oauthCred = await oauthAdd(wallet.id, key, id);

  const body = { source: { accountId: wallet.id }, destination: { accountId: bank.id }, amount: APPROVAL_USD_CENTS };
  const raw = JSON.stringify(body);
  // hold makes the 888.88 USD transfer-out stamped by otp and returns its
  // PayoutApproval, checked.
  const hold = async (otp) => {
    const och = checkChallenge(await call("POST", "/transfer-out", raw), "transfer-out of 888.88 USD", undefined);
    const r = await call("POST", "/transfer-out", raw, { "Service-Wallet-Signature": await stamp(otp, och.payloadToSign), "Request-Id": och.requestId });
    const held = expectStatus(r, 202, "transfer-out of 888.88 USD (signed retry)");
    check(held && !("payloadToSign" in held) && /^PayoutApproval:[0-9a-f-]{36}$/.test(held.id) && held.state === "WAITING" &&
      held.rule === "approval-amount" && held.sourceAccountId === wallet.id && held.destinationAccountId === bank.id &&
      held.amount === APPROVAL_USD_CENTS && held.currency === "USD" && held.requiredApprovals === 1,
      "a held payout answers a WAITING PayoutApproval, not a challenge", r);
    const ttl = Date.parse(held.expiresAt) - Date.parse(held.createdAt);
    check(ttl === 24 * 3600_000, `the approval waits ${ttl} ms, want 24 hours`, r);
    check(await balance(wallet.id, "USD") === funded, "a held payout debits nothing");
    return held;
  };
  // approval asks for the approval of held and checks its payload.
  const approval = async (held) => {
    const ach = checkChallenge(await call("POST", `/payout-approvals/${held.id}/approve`), "approve", undefined);
    checkPayload(ach, { type: "APPROVE_PAYOUT", accountId: wallet.id, parameters: { approvalId: held.id, sourceAccountId: wallet.id,
      destinationAccountId: bank.id, amount: APPROVAL_USD_CENTS, currency: "USD" } }, null);
    return ach;
  };
  const early = await hold(key);
  res = await call("GET", `/payout-approvals/${early.id}`);
  check(expectStatus(res, 200, "GET the approval").state === "WAITING", "the approval waits", res);
  let ach = await approval(early);
  let path = `/payout-approvals/${early.id}/approve`;
  res = await call("POST", path, undefined, { "Service-Wallet-Signature": await stamp(key, ach.payloadToSign), "Request-Id": ach.requestId });
  expectError(res, 403, "FORBIDDEN", "approval stamped by the session that signed the payout");
  res = await call("POST", path, undefined, { "Service-Wallet-Signature": await stamp(await oauthSession(oauthCred, id), ach.payloadToSign), "Request-Id": ach.requestId });
  expectError(res, 403, "FORBIDDEN", "approval stamped by an OAUTH credential the payout's EMAIL_OTP session enrolled just now");
  check(/does not count as another credential/.test(res.json.message), `the refusal says why: ${res.json.message}`, res);

  // A day later: the first approval has expired; the OAUTH credential
  // carries its own assurance.
  const before = await sandboxNow();
  const moved = await advanceClock(24 * 3600);
  check(Date.parse(moved.now) / 1000 - before >= 24 * 3600, `the clock moved to ${moved.now}`, null);
  res = await call("GET", `/payout-approvals/${early.id}`);
  check(expectStatus(res, 200, "GET the first approval").state === "EXPIRED", "the first approval expired", res);
  res = await call("GET", `/auth/credentials?accountId=${encodeURIComponent(wallet.id)}`);
  const otp = await otpLogin(expectStatus(res, 200, "list credentials").data.find((c) => c.type === "EMAIL_OTP").id);
  const held = await hold(otp);
  ach = await approval(held);
  path = `/payout-approvals/${held.id}/approve`;
  const oauthKey = await oauthSession(oauthCred, id);
  res = await call("POST", path, undefined, { "Service-Wallet-Signature": await stamp(oauthKey, ach.payloadToSign), "Request-Id": ach.requestId });
  const tx = expectStatus(res, 200, "approval stamped by the OAUTH session a day after its enrolment");
  check(/^Transaction:/.test(tx.id) && tx.type === "OUTGOING" && tx.sentAmount.amount === APPROVAL_USD_CENTS && tx.sentAmount.currency === "USD" &&
    tx.source.accountId === wallet.id && tx.destination.accountId === bank.id, "the approval made the payout", res);
  check(await balance(wallet.id, "USD") === funded - APPROVAL_USD_CENTS, "the approved payout was debited once");
  res = await call("GET", `/payout-approvals/${held.id}`);
  const approved = expectStatus(res, 200, "GET the approved approval");
  check(approved.state === "APPROVED" && approved.transactionId === tx.id && canonical(approved.approvers) === canonical([`credential:${oauthCred.id}`]),
    "the approval is APPROVED by the OAUTH credential and names the transaction", res);
  res = await call("POST", path);
  expectError(res, 409, "CONFLICT", "a second approval");
  check(res.json.details && res.json.details.state === "APPROVED", `details.state ${JSON.stringify(res.json.details)}, want APPROVED`, res);
  res = await call("POST", path, undefined, { "Service-Wallet-Signature": await stamp(oauthKey, ach.payloadToSign), "Request-Id": ach.requestId });
  expectError(res, 409, "CONFLICT", "the approval's retry sent again");
  check(await balance(wallet.id, "USD") === funded - APPROVAL_USD_CENTS, "nothing more was debited");
  ok(`${early.id} 202 WAITING; APPROVE_PAYOUT stamped by the payout's own session 403, by the OAUTH credential it enrolled just now 403; a day later (sandbox clock) ${held.id} approved by ${oauthCred.id}: 200 ${tx.id} (debited once); approving again 409`);
}

// spkiOf returns the DER of an SPKI PEM.
function spkiOf(pem) {
  const m = /-----BEGIN PUBLIC KEY-----([A-Za-z0-9+/=\s]+)-----END PUBLIC KEY-----/.exec(pem);
  if (!m) throw new Error("not an SPKI PEM");
  return Buffer.from(m[1].replace(/\s/g, ""), "base64");
}

// derToP1363 turns a DER ECDSA signature (X-Grid-Signature carries DER)
// into the r||s form WebCrypto verifies, refusing anything but strict DER.
function derToP1363(der) {
  let p = 0;
  const fail = (why) => { throw new Error("bad DER signature: " + why); };
  if (der[p++] !== 0x30) fail("no SEQUENCE");
  if (der[p++] !== der.length - 2) fail("SEQUENCE length");
  const int = () => {
    if (der[p++] !== 0x02) fail("no INTEGER");
    const len = der[p++];
    const v = der.subarray(p, p + len);
    p += len;
    if (len === 0 || len > 33 || v.length !== len) fail("INTEGER length");
    if (v[0] & 0x80) fail("negative INTEGER");
    if (len > 1 && v[0] === 0 && !(v[1] & 0x80)) fail("non-minimal INTEGER");
    const out = new Uint8Array(32);
    const b = len === 33 ? v.subarray(1) : v;
    out.set(b, 32 - b.length);
    return out;
  };
  const r = int(), s = int();
  if (p !== der.length) fail("trailing bytes");
  return Uint8Array.from([...r, ...s]);
}

// startReceiver starts the webhook receiver the server delivers to (README,
// Webhooks): every POST must carry one X-Grid-Signature,
// {"version":1,"signature":"<base64 DER>"}, an ECDSA P-256 signature over
// SHA-256 of the raw body by the key -webhook-public-key wrote, verified
// here with WebCrypto; X-Grid-Webhook-Id must equal the envelope's id. A
// verified delivery is answered 200, an id already seen 409, anything else
// 401 (and recorded as a failure).
async function startReceiver() {
  const port = process.env.WALLETGATE_WEBHOOK_PORT;
  const keyFile = process.env.WALLETGATE_WEBHOOK_KEY_FILE;
  if (!port || !keyFile) return null;
  const subtle = globalThis.crypto.subtle;
  const alg = { name: "ECDSA", hash: "SHA-256" };
  const key = await subtle.importKey("spki", spkiOf(readFileSync(keyFile, "utf8")), { name: "ECDSA", namedCurve: "P-256" }, false, ["verify"]);
  const r = { events: [], seen: new Set(), duplicates: 0, failures: [], tamperRefused: false, want: new Map(),
    expect(id, statuses) { this.want.set(id, statuses); } };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", async () => {
      const body = Buffer.concat(chunks);
      try {
        if (req.method !== "POST") throw new Error(`method ${req.method}`);
        const sigs = req.headersDistinct["x-grid-signature"] || [];
        if (sigs.length !== 1) throw new Error(`${sigs.length} X-Grid-Signature headers`);
        const h = JSON.parse(sigs[0]);
        if (h.version !== 1 || typeof h.signature !== "string" || Object.keys(h).length !== 2) throw new Error(`header ${sigs[0]}`);
        const sig = derToP1363(Buffer.from(h.signature, "base64"));
        if (!(await subtle.verify(alg, key, sig, body))) throw new Error("signature does not verify");
        if (!r.tamperRefused) {
          const tampered = Buffer.concat([body, Buffer.from(" ")]);
          r.tamperRefused = !(await subtle.verify(alg, key, sig, tampered));
        }
        const env = JSON.parse(body.toString("utf8"));
        if (!/^Webhook:[0-9a-f-]{36}$/.test(env.id) || typeof env.type !== "string" || !env.timestamp || env.data === undefined) throw new Error(`envelope ${body}`);
        // README, Webhooks: the envelope is {id, type, timestamp, data} and nothing more.
        if (canonical(Object.keys(env).sort()) !== canonical(["data", "id", "timestamp", "type"])) throw new Error(`envelope members ${Object.keys(env).join(", ")}: ${body}`);
        if (req.headers["x-grid-webhook-id"] !== undefined && req.headers["x-grid-webhook-id"] !== env.id) throw new Error("X-Grid-Webhook-Id is not the signed id");
        if (r.seen.has(env.id)) {
          r.duplicates++;
          res.writeHead(409).end();
          return;
        }
        r.seen.add(env.id);
        r.events.push(env);
        res.writeHead(200).end();
      } catch (err) {
        r.failures.push(String(err && err.message ? err.message : err));
        res.writeHead(401).end();
      }
    });
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(Number(port), "127.0.0.1", resolve);
  });
  server.unref();
  r.close = () => new Promise((resolve) => server.close(resolve));
  return r;
}

// checkWebhooks waits for the events the flows above wrote and checks them:
// every delivery verified, each external account's status events in commit
// order (README, Webhooks: ordered per external account), the wallet's
// walletauth events in commit order (ordered per embedded wallet), and the
// TEST event answered by this receiver.
async function checkWebhooks(r, { wallet, ethAcct, solAcct, ethAddress, solAddress, oauthCred, otpSession, refreshed }) {
  step = "webhooks";
  const res = await call("POST", "/sandbox/webhooks/test");
  const test = expectStatus(res, 200, "POST /sandbox/webhooks/test");
  check(test.response_status === 200, `the receiver answered the TEST event ${test.response_status}, want 200`, res);
  r.expect(ethAcct.id, ["PENDING_OWNERSHIP_VERIFICATION", "ACTIVE"]);
  // A failed proof, then the new challenge re-opens the wallet, then a proof.
  r.expect(solAcct.id, ["PENDING_OWNERSHIP_VERIFICATION", "UNVERIFIED", "PENDING_OWNERSHIP_VERIFICATION", "ACTIVE"]);
  const statuses = (id) => r.events.filter((e) => e.type === "EXTERNAL_ACCOUNT.STATUS_UPDATED" && e.data.id === id).map((e) => e.data.status);
  const walletEvents = () => r.events.filter((e) => e.type.startsWith("AUTH_") && e.data.accountId === wallet.id);
  const index = (type, id) => walletEvents().findIndex((e) => e.type === type && e.data.id === id);
  const walletWant = [
    ["AUTH_SESSION.CREATED", otpSession.id], ["AUTH_SESSION.REFRESHED", refreshed.id],
    ["AUTH_CREDENTIAL.ADDED", oauthCred.id], ["AUTH_CREDENTIAL.REVOKED", oauthCred.id],
  ];
  const complete = () => [...r.want].every(([id, want]) => statuses(id).length >= want.length) &&
    walletWant.every(([t, id]) => index(t, id) >= 0) && r.events.some((e) => e.type === "TEST");
  const deadline = Date.now() + 20_000;
  while (!complete() && Date.now() < deadline) await new Promise((ok) => setTimeout(ok, 100));
  check(r.failures.length === 0, `deliveries refused by the receiver: ${r.failures.join("; ")}`);
  check(complete(), `events missing after 20 s; received ${r.events.map((e) => `${e.type} ${e.data.id || ""} ${e.data.status || ""}`).join(", ")}`);
  check(r.tamperRefused, "WebCrypto accepted a signature over an altered body");
  for (const [id, want] of r.want) {
    check(canonical(statuses(id)) === canonical(want), `${id}: status events ${statuses(id).join(" -> ")}, want ${want.join(" -> ")}`);
  }
  // README, Webhooks: the ACTIVE event of a valid signature carries
  // data.proof {method, address}; the UNVERIFIED of a foreign signature
  // names no proof (nothing was proved), neither in data nor beside it.
  const statusEvent = (id, status) => r.events.find((e) => e.type === "EXTERNAL_ACCOUNT.STATUS_UPDATED" && e.data.id === id && e.data.status === status);
  for (const [acct, address] of [[ethAcct, ethAddress], [solAcct, solAddress]]) {
    const active = statusEvent(acct.id, "ACTIVE");
    check(canonical(active?.data.proof) === canonical({ method: "WALLET_SIGNATURE", address }),
      `${acct.id}: ACTIVE event's data.proof ${JSON.stringify(active?.data.proof)}, want WALLET_SIGNATURE ${address}`);
  }
  const unverified = statusEvent(solAcct.id, "UNVERIFIED");
  check(unverified && !("proof" in unverified.data) && !("proof" in unverified), `${solAcct.id}: the UNVERIFIED event of a foreign signature names a proof: ${JSON.stringify(unverified)}`);
  const order = walletWant.map(([t, id]) => index(t, id));
  check(order.every((v, i) => i === 0 || v > order[i - 1]), `wallet events out of commit order: ${walletWant.map(([t], i) => `${t}@${order[i]}`).join(", ")}`);
  ok(`${r.events.length} deliveries verified with WebCrypto (X-Grid-Signature), ${r.duplicates} duplicates answered 409; ` +
    `status events in order per account (${[...r.want.values()].map((w) => w.join(">")).join("; ")}), wallet events in commit order, TEST answered 200`);
  await r.close();
}

// ERC6492_SUFFIX ends an ERC-6492 wrapped signature.
const ERC6492_SUFFIX = "0x" + "6492".repeat(16);

// contractWallets proves EVM contract accounts against the server's
// simulated chains (-evm-simulated): an EIP-1271 wallet the sandbox deploys
// for an owner on Base, and a counterfactual wallet on Ethereum whose
// signature ethers wraps in ERC-6492. The other party's signature is
// refused first, as the wallet's code decides. The receiver, when there is
// one, must see each account's status events in that order.
async function contractWallets(customerId, receiver) {
  const owner = Wallet.createRandom();
  const other = Wallet.createRandom();
  const refused = (chainId, sign) => async (path) => {
    let r = await call("POST", `${path}/challenge`, { method: "WALLET_SIGNATURE" });
    const c = expectStatus(r, 201, "first challenge");
    check(c.messageToSign.includes(`\nChain ID: ${chainId}\n`), `the message names chain ${chainId}`, r);
    r = await call("POST", `${path}/verify`, { signature: await sign(c.messageToSign) });
    expectError(r, 400, "INVALID_INPUT", "verify with the other party's signature", "the contract account did not return the EIP-1271 magic value");
    r = await call("GET", path);
    check(expectStatus(r, 200, "GET after the refusal").status === "UNVERIFIED", "status UNVERIFIED after the other party's signature", r);
  };

  step = "contract-wallet-eip1271";
  let res = await call("POST", "/sandbox/contract-wallets", { chainId: 84532, owner: owner.address });
  expectError(res, 400, "INVALID_INPUT", "deploy on a chain that is not simulated");
  check(res.json.details.errors.length === 1 && res.json.details.errors[0].field === "chainId", "the refusal names chainId", res);
  res = await call("POST", "/sandbox/contract-wallets", { chainId: 8453, owner: owner.address.toLowerCase() });
  const deployed = expectStatus(res, 201, "POST /sandbox/contract-wallets");
  check(deployed.chainId === 8453 && deployed.owner === owner.address && isAddress(deployed.address) && getAddress(deployed.address) === deployed.address,
    "the deployed wallet's chainId, owner and EIP-55 address", res);
  const onBase = await proveOwnership(customerId, "BASE_WALLET", deployed.address, (msg) => owner.signMessage(msg),
    refused(8453, (msg) => other.signMessage(msg)), { contractAccount: { chainId: 8453 } });
  const refusedThenActive = ["PENDING_OWNERSHIP_VERIFICATION", "UNVERIFIED", "PENDING_OWNERSHIP_VERIFICATION", "ACTIVE"];
  if (receiver) receiver.expect(onBase.id, refusedThenActive);
  ok(`${onBase.id}: EIP-1271 wallet ${deployed.address} on Base (8453) ACTIVE after its owner's signMessage (the other party's was 400 first)`);

  step = "contract-wallet-erc6492";
  const salt = hexlify(randomBytes(32));
  res = await call("POST", "/sandbox/contract-wallets/counterfactual", { chainId: 1, owner: owner.address, salt });
  const cf = expectStatus(res, 200, "POST /sandbox/contract-wallets/counterfactual");
  check(cf.chainId === 1 && cf.owner === owner.address && cf.salt === salt && isAddress(cf.address) && isAddress(cf.factory), "counterfactual fields", res);
  // The factory call must deploy this owner's wallet with this salt: check
  // it before signing over it.
  const call6492 = new Interface(["function deploy(address owner, bytes32 salt)"]).decodeFunctionData("deploy", cf.factoryCalldata);
  check(call6492[0] === owner.address && call6492[1] === salt, `factoryCalldata deploys ${call6492[0]} with salt ${call6492[1]}`, res);
  const wrap = (sig) => concat([AbiCoder.defaultAbiCoder().encode(["address", "bytes", "bytes"], [cf.factory, cf.factoryCalldata, sig]), ERC6492_SUFFIX]);
  const onEth = await proveOwnership(customerId, "ETHEREUM_WALLET", cf.address, async (msg) => wrap(await owner.signMessage(msg)),
    refused(1, async (msg) => wrap(await other.signMessage(msg))), { contractAccount: { chainId: 1 } });
  res = await call("POST", "/sandbox/contract-wallets/counterfactual", { chainId: 1, owner: owner.address, salt });
  check(expectStatus(res, 200, "counterfactual again").address === cf.address, "the same owner and salt name the same address", res);
  if (receiver) receiver.expect(onEth.id, refusedThenActive);
  ok(`${onEth.id}: counterfactual wallet ${cf.address} on Ethereum (1) ACTIVE after its owner's ERC-6492 signature (factory ${cf.factory}; the other party's was 400 first)`);
}

// proveOwnership registers a FIRST_PARTY wallet (accountInfo extended with
// extra, when given), runs before (when given) with the account path, then
// challenges WALLET_SIGNATURE, signs messageToSign and verifies: the account
// must end ACTIVE.
async function proveOwnership(customerId, accountType, address, sign, before, extra = {}) {
  let res = await call("POST", "/customers/external-accounts", {
    customerId, currency: "USDC", ownershipType: "FIRST_PARTY", accountInfo: { accountType, address, ...extra },
  });
  const acct = expectStatus(res, 201, "register the wallet");
  check(/^ExternalAccount:/.test(acct.id) && acct.customerId === customerId, "external account id and customerId", res);
  check(acct.accountInfo && acct.accountInfo.accountType === accountType, "accountInfo.accountType", res);
  check(acct.status === "PENDING_OWNERSHIP_VERIFICATION", `a fresh self-custody wallet is ${acct.status}, want PENDING_OWNERSHIP_VERIFICATION`, res);
  const path = `/customers/external-accounts/${acct.id}`;
  if (before) await before(path);
  res = await call("POST", `${path}/challenge`, { method: "WALLET_SIGNATURE" });
  const ch = expectStatus(res, 201, "challenge");
  check(ch.method === "WALLET_SIGNATURE" && typeof ch.messageToSign === "string" && ch.messageToSign.length > 0, "challenge with messageToSign", res);
  check(Date.parse(ch.expiresAt) > serverNow(), "challenge expiresAt in the future", res);
  res = await call("POST", `${path}/verify`, { signature: await sign(ch.messageToSign) });
  const verified = expectStatus(res, 200, "verify");
  check(verified.id === acct.id && verified.status === "ACTIVE", `status ${verified.status}, want ACTIVE`, res);
  res = await call("GET", path);
  check(expectStatus(res, 200, "GET the account").status === "ACTIVE", "ACTIVE when read back", res);
  return verified;
}

main().catch((err) => {
  if (err instanceof CheckError) {
    console.error(`FAIL ${err.message}`);
  } else {
    console.error(`FAIL ${step}: ${err && err.stack ? err.stack : err}`);
  }
  process.exit(1);
});
