// Generates vectors.json: ID tokens minted by jose (the npm library) for the
// Go verifier in walletauth/oidc to check with a fixed clock.
//
//   npm ci && node generate.mjs > vectors.json
//
// Keys are fresh on every run, so regenerating changes every token; the Go
// tests read the key set and the expectations from the same file.
import * as jose from 'jose';
import { createECDH, createHash } from 'node:crypto';

const NOW = 1767225600; // 2026-01-01T00:00:00Z, the Go test clock
const GOOGLE = 'https://accounts.google.com';
const GOOGLE_LEGACY = 'accounts.google.com';
const CUSTOM = 'https://id.example.com';
const INFER = 'https://login.example.com/tenant/v2.0';
const GOOGLE_AUD = '1234567890-web.apps.googleusercontent.com';
const CUSTOM_AUD = 'walletgate-ios';

const hex = (b) => Buffer.from(b).toString('hex');
const sha256hex = (s) => createHash('sha256').update(s, 'utf8').digest('hex');

// The client's session public key, compressed P-256, lowercase hex, and the
// nonce that binds a token to it.
const ecdh = createECDH('prime256v1');
ecdh.generateKeys();
const clientPublicKey = ecdh.getPublicKey('hex', 'compressed');
const nonce = sha256hex(clientPublicKey);
const otherNonce = sha256hex(clientPublicKey.toUpperCase());

const rsa = await jose.generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
const ec = await jose.generateKeyPair('ES256', { extractable: true });
const noalg = await jose.generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
const forger = await jose.generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
const forgerEC = await jose.generateKeyPair('ES256', { extractable: true });

const pub = async (k, extra) => ({ ...(await jose.exportJWK(k)), ...extra });
const jwks = {
  keys: [
    await pub(rsa.publicKey, { kid: 'rsa-1', alg: 'RS256', use: 'sig' }),
    await pub(ec.publicKey, { kid: 'ec-1', alg: 'ES256', use: 'sig' }),
    await pub(noalg.publicKey, { kid: 'rsa-noalg', use: 'sig' }), // no alg, like Microsoft Entra
  ],
};

const base = (iss, aud, extra = {}) => ({
  iss, aud, sub: '110169484474386276334', email: 'alice@example.com', email_verified: true,
  iat: NOW - 10, exp: NOW + 3600, nonce, ...extra,
});

const sign = (claims, header, key) => new jose.SignJWT(claims).setProtectedHeader(header).sign(key);

const valid = [];
const invalid = [];
const want = (name, token, code, reason) => invalid.push({ name, token, code, reason });

valid.push({
  name: 'google RS256', token: await sign(base(GOOGLE, GOOGLE_AUD), { alg: 'RS256', kid: 'rsa-1', typ: 'JWT' }, rsa.privateKey),
  issuer: GOOGLE, audience: GOOGLE_AUD, emailVerified: true,
});
valid.push({
  name: 'google legacy iss RS256', token: await sign(base(GOOGLE_LEGACY, GOOGLE_AUD), { alg: 'RS256', kid: 'rsa-1' }, rsa.privateKey),
  issuer: GOOGLE, audience: GOOGLE_AUD, emailVerified: true,
});
valid.push({
  name: 'custom ES256 aud array, email_verified string',
  token: await sign(base(CUSTOM, [CUSTOM_AUD], { email_verified: 'true' }), { alg: 'ES256', kid: 'ec-1' }, ec.privateKey),
  issuer: CUSTOM, audience: CUSTOM_AUD, emailVerified: true,
});
valid.push({
  name: 'inferred alg RS256', token: await sign(base(INFER, CUSTOM_AUD, { email_verified: false }), { alg: 'RS256', kid: 'rsa-noalg' }, noalg.privateKey),
  issuer: INFER, audience: CUSTOM_AUD, emailVerified: false,
});

const good = valid[0].token;
const [h, p, s] = good.split('.');
const tampered = { ...base(GOOGLE, GOOGLE_AUD), sub: 'attacker' };
want('tampered payload', `${h}.${jose.base64url.encode(JSON.stringify(tampered))}.${s}`, 'UNAUTHORIZED', 'signature invalid');
want('forged with another key, same kid', await sign(base(GOOGLE, GOOGLE_AUD), { alg: 'RS256', kid: 'rsa-1' }, forger.privateKey), 'UNAUTHORIZED', 'signature invalid');
want('forged ES256 with another key, same kid', await sign(base(CUSTOM, CUSTOM_AUD), { alg: 'ES256', kid: 'ec-1' }, forgerEC.privateKey), 'UNAUTHORIZED', 'signature invalid');
want('alg none', new jose.UnsecuredJWT(base(GOOGLE, GOOGLE_AUD)).encode(), 'UNAUTHORIZED', 'alg none not allowed');
const pem = new TextEncoder().encode(await jose.exportSPKI(rsa.publicKey));
want('HS256 keyed with the RSA public key', await sign(base(GOOGLE, GOOGLE_AUD), { alg: 'HS256', kid: 'rsa-1' }, pem), 'UNAUTHORIZED', 'HMAC alg not allowed');
want('no kid', await sign(base(GOOGLE, GOOGLE_AUD), { alg: 'RS256' }, rsa.privateKey), 'UNAUTHORIZED', 'kid missing');
want('ES256 header on the RSA kid', await sign(base(GOOGLE, GOOGLE_AUD), { alg: 'ES256', kid: 'rsa-1' }, ec.privateKey), 'UNAUTHORIZED', 'signing key does not allow alg');
const rsaPSS = await jose.importJWK({ ...(await jose.exportJWK(rsa.privateKey)), alg: 'PS256' }, 'PS256');
want('PS256 header on an RS256 key', await sign(base(GOOGLE, GOOGLE_AUD), { alg: 'PS256', kid: 'rsa-1' }, rsaPSS), 'UNAUTHORIZED', 'signing key does not allow alg');
want('issuer not registered', await sign(base('https://evil.example', GOOGLE_AUD), { alg: 'RS256', kid: 'rsa-1' }, rsa.privateKey), 'UNAUTHORIZED', 'iss not registered');
want('aud with two elements', await sign(base(GOOGLE, ['other-client', GOOGLE_AUD]), { alg: 'RS256', kid: 'rsa-1' }, rsa.privateKey), 'UNAUTHORIZED', 'aud malformed');
want('aud of another app', await sign(base(GOOGLE, 'other-client'), { alg: 'RS256', kid: 'rsa-1' }, rsa.privateKey), 'UNAUTHORIZED', 'aud not accepted');
want('sub empty', await sign(base(GOOGLE, GOOGLE_AUD, { sub: '' }), { alg: 'RS256', kid: 'rsa-1' }, rsa.privateKey), 'UNAUTHORIZED', 'sub malformed');
want('iat 120 s old', await sign(base(GOOGLE, GOOGLE_AUD, { iat: NOW - 120 }), { alg: 'RS256', kid: 'rsa-1' }, rsa.privateKey), 'UNAUTHORIZED', 'iat too old');
want('iat as a string', await sign(base(GOOGLE, GOOGLE_AUD, { iat: String(NOW - 10) }), { alg: 'RS256', kid: 'rsa-1' }, rsa.privateKey), 'UNAUTHORIZED', 'iat not numeric');
want('expired', await sign(base(GOOGLE, GOOGLE_AUD, { exp: NOW - 1 }), { alg: 'RS256', kid: 'rsa-1' }, rsa.privateKey), 'UNAUTHORIZED', 'exp in the past');
want('nonce of another key encoding', await sign(base(GOOGLE, GOOGLE_AUD, { nonce: otherNonce }), { alg: 'RS256', kid: 'rsa-1' }, rsa.privateKey), 'UNAUTHORIZED', 'nonce mismatch');
const flattened = await new jose.FlattenedSign(new TextEncoder().encode(JSON.stringify(base(GOOGLE, GOOGLE_AUD))))
  .setProtectedHeader({ alg: 'RS256', kid: 'rsa-1' }).sign(rsa.privateKey);
want('JSON serialization', JSON.stringify(flattened), 'INVALID_INPUT', 'not a JWT');
want('two segments', `${h}.${p}`, 'INVALID_INPUT', 'not a JWT');
want('padded base64', `${h}.${p}=.${s}`, 'INVALID_INPUT', 'not a JWT');
want('sandbox literal', 'sandbox-valid-oidc-token', 'INVALID_INPUT', 'not a JWT');

const out = {
  generator: 'jose 6.2.17 (walletauth/oidc/testdata/jose/generate.mjs)',
  now: NOW,
  clientPublicKey,
  nonce,
  issuers: [
    { id: GOOGLE, aliases: [GOOGLE_LEGACY], audiences: [GOOGLE_AUD] },
    { id: CUSTOM, audiences: [CUSTOM_AUD] },
    { id: INFER, audiences: [CUSTOM_AUD], inferAlgorithm: true },
  ],
  jwks,
  valid,
  invalid,
};
process.stdout.write(JSON.stringify(out, null, 2) + '\n');
