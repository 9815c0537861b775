// Passkeys in the page: the WebAuthn ceremonies, and the ADD_CREDENTIAL
// parameters a registration must produce, read from the authenticator's own
// attestation (as examples/client's PasskeyAddParams does in Go) so the page
// checks the payload adds exactly the passkey the browser made.

export function b64url(bytes) {
  const u = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let s = "";
  for (const b of u) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function fromB64url(s) {
  if (typeof s !== "string" || !/^[A-Za-z0-9_-]*$/.test(s)) throw new Error("not base64url");
  const t = s.replace(/-/g, "+").replace(/_/g, "/");
  return Uint8Array.from(atob(t + "===".slice((t.length + 3) % 4)), (c) => c.charCodeAt(0));
}

// cbor decodes one definite-length CBOR item at bytes[at] and returns
// [value, next offset]; byte strings are Uint8Arrays, maps are Maps. It
// covers what an attestation object holds and throws on anything else.
function cbor(bytes, at, depth = 0) {
  if (depth > 16) throw new Error("CBOR nested too deep");
  if (at >= bytes.length) throw new Error("CBOR truncated");
  const major = bytes[at] >> 5;
  const info = bytes[at] & 0x1f;
  let p = at + 1;
  let n;
  if (info < 24) n = info;
  else if (info === 24) n = bytes[p++];
  else if (info === 25) {
    n = (bytes[p] << 8) | bytes[p + 1];
    p += 2;
  } else if (info === 26) {
    n = ((bytes[p] << 24) >>> 0) + (bytes[p + 1] << 16) + (bytes[p + 2] << 8) + bytes[p + 3];
    p += 4;
  } else throw new Error("CBOR length form not supported");
  if (p > bytes.length) throw new Error("CBOR truncated");
  switch (major) {
    case 0:
      return [n, p];
    case 1:
      return [-1 - n, p];
    case 2:
      if (p + n > bytes.length) throw new Error("CBOR truncated");
      return [bytes.slice(p, p + n), p + n];
    case 3:
      if (p + n > bytes.length) throw new Error("CBOR truncated");
      return [new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(p, p + n)), p + n];
    case 4: {
      const out = [];
      for (let k = 0; k < n; k++) {
        const [v, q] = cbor(bytes, p, depth + 1);
        out.push(v);
        p = q;
      }
      return [out, p];
    }
    case 5: {
      const out = new Map();
      for (let k = 0; k < n; k++) {
        const [key, q] = cbor(bytes, p, depth + 1);
        const [v, r] = cbor(bytes, q, depth + 1);
        if (out.has(key)) throw new Error("CBOR map key repeated");
        out.set(key, v);
        p = r;
      }
      return [out, p];
    }
    case 7:
      if (info === 20) return [false, p];
      if (info === 21) return [true, p];
      if (info === 22) return [null, p];
      throw new Error("CBOR simple value not supported");
    default:
      throw new Error("CBOR tags not supported");
  }
}

// register asks the browser for a passkey of the wallet under the sandbox's
// registration challenge and returns the attestation the API takes.
export async function register(rpId, accountId, userName, challenge) {
  const cred = await navigator.credentials.create({
    publicKey: {
      rp: { id: rpId, name: "walletgate sandbox" },
      user: { id: new TextEncoder().encode(accountId), name: userName, displayName: userName },
      challenge: fromB64url(challenge),
      pubKeyCredParams: [{ type: "public-key", alg: -7 }, { type: "public-key", alg: -257 }],
      authenticatorSelection: { residentKey: "required", userVerification: "required" },
      attestation: "none",
    },
  });
  return {
    credentialId: b64url(cred.rawId),
    clientDataJson: b64url(cred.response.clientDataJSON),
    attestationObject: b64url(cred.response.attestationObject),
    transports: cred.response.getTransports ? cred.response.getTransports() : [],
  };
}

// addParams returns the ADD_CREDENTIAL parameters the registration of att
// must produce (walletauth.AddParams of a PASSKEY): the attested credential
// id, COSE public key, AAGUID, counter and flags read from the attestation
// object. It throws when the attestation is not a "none" attestation of the
// credential it names.
export function addParams(att, nickname, challenge) {
  const [obj, end] = cbor(fromB64url(att.attestationObject), 0);
  if (!(obj instanceof Map) || end !== fromB64url(att.attestationObject).length) throw new Error("the attestation object is not one CBOR map");
  if (obj.get("fmt") !== "none") throw new Error(`attestation format ${JSON.stringify(obj.get("fmt"))}: this page asks for "none"`);
  const ad = obj.get("authData");
  if (!(ad instanceof Uint8Array) || ad.length < 37 + 18) throw new Error("authenticator data too short");
  const flags = ad[32];
  if (!(flags & 0x40)) throw new Error("authenticator data carries no attested credential");
  const signCount = ((ad[33] << 24) >>> 0) + (ad[34] << 16) + (ad[35] << 8) + ad[36];
  const aaguid = ad.slice(37, 53);
  const idLen = (ad[53] << 8) | ad[54];
  const credId = ad.slice(55, 55 + idLen);
  if (55 + idLen > ad.length) throw new Error("authenticator data truncated");
  const [, keyEnd] = cbor(ad, 55 + idLen);
  if (!(flags & 0x80) && keyEnd !== ad.length) throw new Error("trailing bytes after the credential public key");
  const publicKey = ad.slice(55 + idLen, keyEnd);
  if (b64url(credId) !== att.credentialId) throw new Error("the attested credential id is not the attestation's credentialId");
  const passkey = {
    credentialId: att.credentialId, registrationChallenge: challenge, publicKey: b64url(publicKey),
    attestationType: "none", aaguid: b64url(aaguid), signCount,
    userPresent: !!(flags & 0x01), userVerified: !!(flags & 0x04),
    backupEligible: !!(flags & 0x08), backupState: !!(flags & 0x10),
  };
  if (att.transports && att.transports.length > 0) passkey.transports = [...att.transports];
  return { type: "PASSKEY", nickname: nickname.trim(), passkey };
}

// assert signs the login challenge (lowercase hex; the browser signs its
// UTF-8 bytes) with the wallet's passkey.
export async function assert(rpId, credentialId, challengeHex) {
  const cred = await navigator.credentials.get({
    publicKey: {
      rpId, challenge: new TextEncoder().encode(challengeHex),
      allowCredentials: [{ type: "public-key", id: fromB64url(credentialId) }], userVerification: "required",
    },
  });
  const r = cred.response;
  const out = {
    credentialId: b64url(cred.rawId), clientDataJson: b64url(r.clientDataJSON),
    authenticatorData: b64url(r.authenticatorData), signature: b64url(r.signature),
  };
  if (r.userHandle) out.userHandle = b64url(r.userHandle);
  return out;
}
