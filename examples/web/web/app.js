// The page's flows. Each step logs the requests it sends and the answers it
// gets in its section, and sums up its outcome in the section's status line
// (a live region): "Refused: <HTTP status> <code>" when the sandbox refuses,
// "Not signed: ..." when the page refuses a payload before stamping it.
//
// Keys: every session key is a P-256 key made here (generateP256KeyPair);
// only its compressed public half is sent (inside the sealed OTP bundle, or
// as the passkey login's clientPublicKey, which the sandbox's client-held
// mode makes the session key). The Ethereum key is made here too.

import { ApiKeyStamper, Wallet, encryptOtpCodeToBundle, generateP256KeyPair, uint8ArrayFromHexString, verifyMessage } from "./vendor.js";
import { Refusal, bodySha256, checkPayload, routeType } from "./expect.js";
import * as webauthn from "./webauthn.js";

// Sandbox constants (sandbox/README.md).
const ORGANIZATION_ID = "org_sandbox";
const USDC_UNIT = 1_000_000n;
const FUND_USDC = 2000n;

const $ = (id) => document.getElementById(id);
const state = {};
let config = null;

// ApiError is an answer the page did not want: its HTTP status, error code,
// message and details.reason.
class ApiError extends Error {
  constructor(res, want) {
    const j = res.json || {};
    super(j.message || `HTTP ${res.status}, want ${want}`);
    this.status = res.status;
    this.code = j.code || "";
    this.reason = j.details && typeof j.details.reason === "string" ? j.details.reason : "";
  }
}

function setStatus(step, outcome, text) {
  const el = $(`${step}-status`);
  el.dataset.outcome = outcome;
  el.textContent = text;
}

function entry(step, title, cls) {
  const e = document.createElement("div");
  e.className = "entry" + (cls ? " " + cls : "");
  const h = document.createElement("h3");
  h.textContent = title;
  e.append(h);
  $(`${step}-log`).append(e);
  return e;
}

function block(parent, label, text) {
  const p = document.createElement("p");
  p.textContent = label;
  const pre = document.createElement("pre");
  pre.tabIndex = 0; // scrollable by keyboard
  pre.setAttribute("aria-label", label);
  pre.textContent = text;
  parent.append(p, pre);
}

function line(parent, text, cls) {
  const p = document.createElement("p");
  if (cls) p.className = cls;
  p.textContent = text;
  parent.append(p);
  return p;
}

const pretty = (text) => {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
};

const short = (s) => (s.length > 24 ? s.slice(0, 20) + "…" : s);

// call sends one API request of the page (the program adds the platform
// credentials) and logs it with its answer in step's section.
async function call(step, method, path, { body, headers = {} } = {}) {
  const url = config.basePath + path;
  const init = { method, headers: { [config.pageHeader]: "1", ...headers } };
  if (body !== undefined) {
    init.body = body;
    init.headers["Content-Type"] = "application/json";
  }
  const e = entry(step, `${method} ${url}`);
  const shown = Object.entries(headers).map(([k, v]) => `${k}: ${k === "Service-Wallet-Signature" ? short(v) : v}`);
  block(e, "Request", [...shown, body === undefined ? "(no body)" : pretty(body)].join("\n"));
  const r = await fetch(url, init);
  const text = await r.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: shown as text
  }
  block(e, `Answer: HTTP ${r.status}`, json ? JSON.stringify(json, null, 2) : text || "(no body)");
  if (r.status >= 400) {
    e.classList.add("refused");
    const reason = json && json.details && json.details.reason ? ` (${json.details.reason})` : "";
    line(e, `Error code: ${json && json.code ? json.code : "none"}, HTTP ${r.status}${reason}`, "code");
  } else {
    e.classList.add("ok");
  }
  return { status: r.status, json, text };
}

function want(res, status) {
  if (res.status !== status) throw new ApiError(res, status);
  return res.json;
}

async function stamp(key, payloadToSign) {
  const stamper = new ApiKeyStamper({ apiPublicKey: key.publicKey, apiPrivateKey: key.privateKey });
  const { stampHeaderValue } = await stamper.stamp(payloadToSign);
  return stampHeaderValue;
}

const CHECKS = ["payloadToSign", "type", "requestId", "accountId", "bodySha256", "parameters", "expiresAt"];

// signed runs a signed retry: the first leg (202), the check of its
// payloadToSign against what the page asked for, and only then the stamp
// with key and the retry with the same body bytes. It returns the retry's
// answer, which must have status ok.
async function signed(step, method, path, bodyValue, { accountId, parameters, key, ok, headers = {} }) {
  const body = bodyValue === undefined ? undefined : JSON.stringify(bodyValue);
  const first = await call(step, method, path, { body, headers });
  const ch = want(first, 202);
  const e = entry(step, "What the session key is asked to sign");
  block(e, "payloadToSign", pretty(String(ch.payloadToSign)));
  let type;
  try {
    type = routeType(method, path);
  } catch {
    type = "(unknown route)";
  }
  block(e, "What this page asked for", JSON.stringify({ type, requestId: ch.requestId, accountId, bodySha256: await bodySha256(body), parameters }, null, 2));
  const list = document.createElement("ul");
  list.className = "checks";
  list.setAttribute("aria-label", "Checks before signing");
  e.append(list);
  try {
    await checkPayload(ch.payloadToSign, { method, path, accountId, body, parameters, requestId: ch.requestId });
  } catch (err) {
    if (err instanceof Refusal) {
      const failed = CHECKS.indexOf(err.check);
      if (failed < 0) {
        const li = document.createElement("li");
        li.className = "fail";
        li.textContent = `${err.check}: ${err.reason}`;
        list.append(li);
      }
      CHECKS.forEach((c, i) => {
        if (failed < 0) return;
        if (i > failed && failed >= 0) return;
        const li = document.createElement("li");
        li.className = i === failed ? "fail" : "pass";
        li.textContent = i === failed ? `${c}: ${err.reason}` : c;
        list.append(li);
      });
      e.classList.add("refused");
      line(e, `Not signed: the payload failed the ${err.check} check. Nothing was sent.`, "code");
    }
    throw err;
  }
  for (const c of CHECKS) {
    const li = document.createElement("li");
    li.className = "pass";
    li.textContent = c;
    list.append(li);
  }
  e.classList.add("ok");
  line(e, "All checks passed: signed with the session key.");
  const res = await call(step, method, path, { body, headers: { ...headers, "Service-Wallet-Signature": await stamp(key, ch.payloadToSign), "Request-Id": ch.requestId } });
  return want(res, ok);
}

// action runs fn for a button or form of step, reporting its outcome.
function action(step, fn) {
  return async (ev) => {
    if (ev) ev.preventDefault();
    const section = $(`step-${step}`) || document.body;
    section.setAttribute("aria-busy", "true");
    $(`${step}-log`).replaceChildren(); // the log shows the latest action only
    setStatus(step, "busy", "Working…");
    try {
      await fn();
    } catch (err) {
      if (err instanceof ApiError) {
        setStatus(step, "refused", `Refused: ${err.status} ${err.code || "(no code)"}: ${err.reason || err.message}`);
      } else if (err instanceof Refusal) {
        setStatus(step, "refused", `Not signed: the payload failed the ${err.check} check (${err.reason})`);
      } else {
        setStatus(step, "error", `Error: ${err && err.message ? err.message : err}`);
      }
    } finally {
      section.removeAttribute("aria-busy");
    }
  };
}

const enable = (...ids) => ids.forEach((id) => ($(id).disabled = false));

// signer is the session key that signs wallet operations: the passkey
// session's once there is one, the email session's before.
const signer = () => state.passkeyKey || state.otpKey;

function usdcUnits(text) {
  const m = /^\s*(\d{1,9})(?:\.(\d{1,6}))?\s*$/.exec(text);
  if (!m) throw new Error("the amount must be a number of USDC with at most 6 decimals");
  const units = BigInt(m[1]) * USDC_UNIT + BigInt((m[2] || "").padEnd(6, "0"));
  if (units <= 0n) throw new Error("the amount must be positive");
  return Number(units);
}

async function createCustomer() {
  const body = JSON.stringify({ customerType: "INDIVIDUAL", fullName: $("full-name").value, email: $("email").value.trim() });
  const customer = want(await call("customer", "POST", "/customers", { body }), 201);
  const wallets = want(await call("customer", "GET", `/internal-accounts?customerId=${encodeURIComponent(customer.id)}`), 200);
  if (!wallets.data || wallets.data.length !== 1) throw new Error("the customer has no embedded wallet");
  const creds = want(await call("customer", "GET", `/auth/credentials?accountId=${encodeURIComponent(wallets.data[0].id)}`), 200);
  const cred = (creds.data || []).find((c) => c.type === "EMAIL_OTP");
  if (!cred) throw new Error("the wallet has no EMAIL_OTP credential");
  Object.assign(state, { customer, wallet: wallets.data[0], emailCred: cred });
  setStatus("customer", "ok", `Created ${customer.id}: wallet ${state.wallet.id}, EMAIL_OTP credential ${cred.id}`);
  $("create-customer").disabled = true;
  enable("otp-send");
}

async function sendCode() {
  const ch = want(await call("otp", "POST", `/auth/credentials/${state.emailCred.id}/challenge`, { body: "{}" }), 200);
  const bundle = ch.otpEncryptionTargetBundle;
  if (typeof bundle !== "string") throw new Error("no otpEncryptionTargetBundle");
  const envelope = JSON.parse(bundle);
  const e = entry("otp", "Target bundle check");
  const signedData = JSON.parse(new TextDecoder().decode(uint8ArrayFromHexString(envelope.data)));
  block(e, "Signed by (enclaveQuorumPublic) and the pinned key", `${envelope.enclaveQuorumPublic}\n${config.bundleSigningKey}`);
  if (envelope.enclaveQuorumPublic !== config.bundleSigningKey) {
    e.classList.add("refused");
    throw new Error("the target bundle is not signed by the pinned bundle signing key");
  }
  if (signedData.organizationId !== ORGANIZATION_ID) throw new Error(`the target bundle names organization ${signedData.organizationId}`);
  line(e, "The bundle names the pinned key; encryptOtpCodeToBundle verifies its signature before sealing the code.");
  e.classList.add("ok");
  state.targetBundle = bundle;
  setStatus("otp", "ok", `Code sent (the sandbox's code is 000000). Target bundle signed by the pinned key ${short(config.bundleSigningKey)}`);
  enable("otp-verify");
  $("otp-code").focus();
}

async function verifyCode() {
  const code = $("otp-code").value.trim();
  if (!/^\d{6}$/.test(code)) throw new Error("enter the 6 digits of the code");
  const device = generateP256KeyPair(); // the session key: made here, never sent
  const sealed = await encryptOtpCodeToBundle(code, state.targetBundle, device.publicKey, config.bundleSigningKey);
  const path = `/auth/credentials/${state.emailCred.id}/verify`;
  const session = await signed("otp", "POST", path, { type: "EMAIL_OTP", encryptedOtpBundle: sealed }, {
    accountId: state.wallet.id, parameters: { credentialId: state.emailCred.id, publicKey: device.publicKey }, key: device, ok: 200,
  });
  if (session.type !== "EMAIL_OTP" || session.accountId !== state.wallet.id) throw new Error("the session is not the wallet's EMAIL_OTP session");
  if ("encryptedSessionSigningKey" in session) throw new Error("an OTP session must carry no server key");
  state.otpKey = { privateKey: device.privateKey, publicKey: device.publicKey };
  state.otpSession = session;
  setStatus("otp", "ok", `Logged in: EMAIL_OTP session ${session.id}, key ${short(device.publicKey)} held in this page`);
  $("otp-send").disabled = true;
  $("otp-verify").disabled = true;
  enable("passkey-register", "privacy-update", "eth-create");
}

async function registerPasskey() {
  if (!window.PublicKeyCredential) throw new Error("this browser has no WebAuthn");
  const rc = want(await call("passkey", "POST", "/sandbox/passkeys/registration-challenge", { body: JSON.stringify({ accountId: state.wallet.id }) }), 201);
  if (rc.rpId !== config.rpId) throw new Error(`the challenge is for RP ${rc.rpId}, not ${config.rpId}`);
  const nickname = $("passkey-nickname").value;
  const att = await webauthn.register(rc.rpId, state.wallet.id, state.customer.email, rc.challenge);
  const params = webauthn.addParams(att, nickname, rc.challenge);
  const cred = await signed("passkey", "POST", "/auth/credentials",
    { type: "PASSKEY", accountId: state.wallet.id, nickname, challenge: rc.challenge, attestation: att },
    { accountId: state.wallet.id, parameters: params, key: state.otpKey, ok: 201 });
  if (cred.type !== "PASSKEY" || cred.credentialId !== att.credentialId) throw new Error("the sandbox added another credential");
  state.passkeyCred = cred;
  setStatus("passkey", "ok", `Passkey registered: ${cred.id} (${cred.nickname})`);
  $("passkey-register").disabled = true;
  enable("passkey-login");
}

async function passkeyLogin() {
  const key = generateP256KeyPair(); // compressed public key: the session key itself (client-held)
  const ch = want(await call("passkey", "POST", `/auth/credentials/${state.passkeyCred.id}/challenge`, { body: JSON.stringify({ clientPublicKey: key.publicKey }) }), 200);
  const assertion = await webauthn.assert(config.rpId, state.passkeyCred.credentialId, ch.challenge);
  const res = await call("passkey", "POST", `/auth/credentials/${state.passkeyCred.id}/verify`,
    { body: JSON.stringify({ type: "PASSKEY", assertion }), headers: { "Request-Id": ch.requestId } });
  const session = want(res, 200);
  if (session.type !== "PASSKEY" || session.accountId !== state.wallet.id) throw new Error("the session is not the wallet's PASSKEY session");
  if ("encryptedSessionSigningKey" in session) throw new Error("the sandbox generated the session key; this page keeps its own");
  state.passkeyKey = { privateKey: key.privateKey, publicKey: key.publicKey };
  state.passkeySession = session;
  setStatus("passkey", "ok", `Logged in with the passkey: PASSKEY session ${session.id}, key ${short(key.publicKey)} held in this page`);
  $("passkey-login").disabled = true;
  enable("revoke");
}

async function updatePrivacy() {
  const privateEnabled = $("private-enabled").checked;
  const out = await signed("privacy", "PATCH", `/internal-accounts/${state.wallet.id}`, { privateEnabled },
    { accountId: state.wallet.id, parameters: { privateEnabled }, key: signer(), ok: 200 });
  if (out.privateEnabled !== privateEnabled) throw new Error(`privateEnabled is ${out.privateEnabled}`);
  setStatus("privacy", "ok", `Signed and applied: privateEnabled is ${out.privateEnabled}`);
}

async function createEthWallet() {
  const eth = Wallet.createRandom();
  const acct = want(await call("eth", "POST", "/customers/external-accounts", {
    body: JSON.stringify({ customerId: state.customer.id, currency: "USDC", ownershipType: "FIRST_PARTY",
      accountInfo: { accountType: "ETHEREUM_WALLET", address: eth.address } }),
  }), 201);
  state.eth = eth;
  state.ethAcct = acct;
  setStatus("eth", "ok", `Registered ${eth.address} as ${acct.id}: ${acct.status}`);
  $("eth-create").disabled = true;
  enable("fund", "payout", "prove");
}

async function fund() {
  want(await call("payout", "POST", `/sandbox/internal-accounts/${state.wallet.id}/fund`,
    { body: JSON.stringify({ amount: Number(FUND_USDC * USDC_UNIT), currency: "USDC" }) }), 200);
  setStatus("payout", "ok", `Funded: ${FUND_USDC} USDC`);
}

async function payout(step) {
  const amount = usdcUnits($("payout-amount").value);
  const headers = { "Idempotency-Key": crypto.randomUUID() };
  const body = { source: { accountId: state.wallet.id }, destination: { accountId: state.ethAcct.id }, amount };
  const tx = await signed(step, "POST", "/transfer-out", body, {
    accountId: state.wallet.id, headers, key: signer(), ok: 201,
    parameters: { sourceAccountId: state.wallet.id, destinationAccountId: state.ethAcct.id, amount, currency: "USDC" },
  });
  setStatus(step, "ok", `Paid: ${tx.id} ${tx.status}, ${tx.sentAmount.amount} USDC units to ${state.ethAcct.id}`);
}

async function prove() {
  const path = `/customers/external-accounts/${state.ethAcct.id}`;
  const ch = want(await call("prove", "POST", `${path}/challenge`, { body: JSON.stringify({ method: "WALLET_SIGNATURE" }) }), 201);
  const signature = await state.eth.signMessage(ch.messageToSign); // personal_sign with the page's key
  if (verifyMessage(ch.messageToSign, signature) !== state.eth.address) throw new Error("ethers does not verify its own signature");
  const e = entry("prove", "Signed in this page (personal_sign)");
  block(e, "messageToSign", ch.messageToSign);
  block(e, "signature", signature);
  const acct = want(await call("prove", "POST", `${path}/verify`, { body: JSON.stringify({ signature }) }), 200);
  if (acct.status !== "ACTIVE") throw new Error(`the account is ${acct.status}`);
  setStatus("prove", "ok", `Proven: ${acct.id} is ACTIVE`);
  $("prove").disabled = true;
  enable("payout-again");
}

async function revoke() {
  const id = state.otpSession.id;
  await signed("revoke", "DELETE", `/auth/sessions/${id}`, undefined,
    { accountId: state.wallet.id, parameters: { sessionId: id }, key: signer(), ok: 204 });
  const list = want(await call("revoke", "GET", `/auth/sessions?accountId=${encodeURIComponent(state.wallet.id)}`), 200);
  if (list.data.some((s) => s.id === id)) throw new Error("the session is still listed");
  setStatus("revoke", "ok", `Revoked the email session ${id}; ${list.data.length} session(s) remain`);
  $("revoke").disabled = true;
  enable("revoked-try");
}

async function revokedTry() {
  const privateEnabled = $("private-enabled").checked;
  await signed("revoke", "PATCH", `/internal-accounts/${state.wallet.id}`, { privateEnabled },
    { accountId: state.wallet.id, parameters: { privateEnabled }, key: state.otpKey, ok: 200 });
  throw new Error("the revoked session's signature was accepted");
}

async function start() {
  try {
    const r = await fetch("/config.json");
    config = await r.json();
    if (!/^04[0-9a-f]{128}$/.test(config.bundleSigningKey)) throw new Error("the bundle signing key is not an uncompressed P-256 key");
  } catch (err) {
    setStatus("config", "error", `Error: cannot read /config.json: ${err.message}`);
    return;
  }
  $("email").value = `ada.${Date.now()}@example.com`;
  $("customer-form").addEventListener("submit", action("customer", createCustomer));
  $("otp-send").addEventListener("click", action("otp", sendCode));
  $("otp-form").addEventListener("submit", action("otp", verifyCode));
  $("passkey-register").addEventListener("click", action("passkey", registerPasskey));
  $("passkey-login").addEventListener("click", action("passkey", passkeyLogin));
  $("privacy-update").addEventListener("click", action("privacy", updatePrivacy));
  $("eth-create").addEventListener("click", action("eth", createEthWallet));
  $("fund").addEventListener("click", action("payout", fund));
  $("payout").addEventListener("click", action("payout", () => payout("payout")));
  $("prove").addEventListener("click", action("prove", prove));
  $("payout-again").addEventListener("click", action("payout-again", () => payout("payout-again")));
  $("revoke").addEventListener("click", action("revoke", revoke));
  $("revoked-try").addEventListener("click", action("revoke", revokedTry));
  document.body.dataset.ready = "true";
  setStatus("config", "ok", `Sandbox ready: API at ${config.basePath}, passkeys for ${config.rpId}, pinned bundle signing key ${short(config.bundleSigningKey)}`);
}

start();
