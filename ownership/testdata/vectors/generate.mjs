// Generates vectors.json: wallet signatures made by the real client libraries
// (ethers, bitcoinjs-message, bip322-js, tweetnacl + bs58, tronweb, the Spark
// SDK, @noble/curves + zbase32 for the LND format), each re-checked by that
// library's own verifier where it has one, plus negative vectors.
//
//   npm ci && node generate.mjs > vectors.json
//
// Keys are sha256(utf8("walletgate-vector-<label>")): public, never fund them.
// Output is deterministic except the BIP-322 taproot signatures (BIP-340 aux
// randomness), which change on every run and still verify.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as ethers from 'ethers';
import bitcoinMessage from 'bitcoinjs-message';
import { BIP322, Signer as BIP322Signer, Verifier as BIP322Verifier, Address as BIP322Address } from 'bip322-js';
import * as bitcoin from 'bitcoinjs-lib';
import ecc from '@bitcoinerlab/secp256k1';
import { ECPairFactory } from 'ecpair';
import nacl from 'tweetnacl';
import bs58 from 'bs58';
import { TronWeb, Trx } from 'tronweb';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import zbase32 from 'zbase32';
import { bech32m } from 'bech32';
import { DefaultSparkSigner, encodeSparkAddress } from '@buildonspark/spark-sdk';

bitcoin.initEccLib(ecc);
const ECPair = ECPairFactory(ecc);

const sha256 = (b) => createHash('sha256').update(b).digest();
const keyFor = (label) => sha256(Buffer.from('walletgate-vector-' + label, 'utf8'));
const hex = (b) => Buffer.from(b).toString('hex');
const N = secp256k1.Point.CURVE().n;

// uuidFor derives a stable UUID-shaped account id from a label.
function uuidFor(label) {
  const h = sha256(Buffer.from('account-' + label)).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

// challenge builds a service-style messageToSign: ASCII, \n line endings.
function challenge(label, address, chain, network) {
  const nonce = sha256(Buffer.from('nonce-' + label)).toString('base64url').slice(0, 22);
  return [
    'walletgate wants you to prove ownership of this wallet.',
    `Address: ${address}`,
    `Network: ${chain} ${network}`,
    `Account: ExternalAccount:${uuidFor(label)}`,
    `Nonce: ${nonce}`,
    'Issued At: 2026-11-21T08:00:00Z',
    'Expires At: 2026-11-21T08:10:00Z',
  ].join('\n');
}

const UNICODE = 'Ownership proof ü ✓ — 東京 🚀\nsecond line';
const FOUR_LINES = 'line one\nline two\nline three\nline four';
const LONG = 'walletgate long message. '.repeat(14) + 'end'; // > 253 bytes: 3-byte varint

const vectors = [];
function add(v) {
  vectors.push({
    name: v.name,
    account_type: v.account_type,
    network: v.network ?? 'mainnet',
    address: v.address,
    message: v.message,
    message_utf8_hex: hex(Buffer.from(v.message, 'utf8')),
    signature: v.signature,
    scheme: v.scheme ?? '',
    valid: v.valid,
    ...(v.expect_reason ? { expect_reason: v.expect_reason } : {}),
    library: v.library,
    ...(v.self_check !== undefined ? { self_check: v.self_check } : {}),
    ...(v.library_says ? { library_says: v.library_says } : {}),
    ...(v.note ? { note: v.note } : {}),
  });
}
function must(ok, what) {
  if (!ok) throw new Error('self-check failed: ' + what);
}
// flipHex flips one bit in the middle of a hex string's bytes.
function flipByte(buf, i) {
  const b = Buffer.from(buf);
  b[i] ^= 0x01;
  return b;
}

// ---------------------------------------------------------------- EVM
{
  const lib = 'ethers@6.17.0';
  const types = [
    ['ETHEREUM_WALLET', 'ethereum'],
    ['BASE_WALLET', 'base'],
    ['POLYGON_WALLET', 'polygon'],
    ['PLASMA_WALLET', 'plasma'],
  ];
  for (const [i, [type, chain]] of types.entries()) {
    const w = new ethers.Wallet('0x' + hex(keyFor('evm-' + i)));
    const msg = challenge('evm-' + chain, w.address, chain, 'mainnet');
    const sig = w.signMessageSync(msg);
    must(ethers.verifyMessage(msg, sig) === w.address, 'evm ' + chain);
    add({ name: `evm-${chain}-challenge`, account_type: type, address: w.address, message: msg, signature: sig, valid: true, library: lib, self_check: true });
  }
  const w = new ethers.Wallet('0x' + hex(keyFor('evm-misc')));
  for (const [name, msg] of [['unicode', UNICODE], ['four-lines', FOUR_LINES], ['long', LONG], ['empty', '']]) {
    const sig = w.signMessageSync(msg);
    must(ethers.verifyMessage(msg, sig) === w.address, 'evm ' + name);
    add({ name: `evm-${name}`, account_type: 'ETHEREUM_WALLET', address: w.address, message: msg, signature: sig, valid: true, library: lib, self_check: true });
  }
  const msg = challenge('evm-variants', w.address, 'ethereum', 'mainnet');
  const sig = w.signMessageSync(msg);
  const raw = ethers.getBytes(sig);
  add({ name: 'evm-lowercase-address', account_type: 'ETHEREUM_WALLET', address: w.address.toLowerCase(), message: msg, signature: sig, valid: true, library: lib, self_check: true });
  add({ name: 'evm-uppercase-address', account_type: 'ETHEREUM_WALLET', address: '0x' + w.address.slice(2).toUpperCase(), message: msg, signature: sig, valid: true, library: lib, note: 'all-uppercase hex carries no checksum' });
  const v01 = Uint8Array.from(raw); v01[64] -= 27;
  must(ethers.verifyMessage(msg, ethers.hexlify(v01)) === w.address, 'evm v=0/1');
  add({ name: 'evm-ledger-v01', account_type: 'ETHEREUM_WALLET', address: w.address, message: msg, signature: ethers.hexlify(v01), valid: true, library: lib, self_check: true, note: 'v rewritten to 0/1 as Ledger returns it' });
  add({ name: 'evm-no-0x-prefix', account_type: 'ETHEREUM_WALLET', address: w.address, message: msg, signature: sig.slice(2), valid: true, library: lib });
  // negatives
  const other = new ethers.Wallet('0x' + hex(keyFor('evm-other')));
  add({ name: 'evm-neg-wrong-address', account_type: 'ETHEREUM_WALLET', address: other.address, message: msg, signature: sig, valid: false, expect_reason: 'recovered address does not match', library: lib });
  add({ name: 'evm-neg-wrong-message', account_type: 'ETHEREUM_WALLET', address: w.address, message: msg.replace('Nonce: ', 'Nonce: x'), signature: sig, valid: false, expect_reason: 'recovered address does not match', library: lib });
  add({ name: 'evm-neg-crlf', account_type: 'ETHEREUM_WALLET', address: w.address, message: msg.replaceAll('\n', '\r\n'), signature: sig, valid: false, expect_reason: 'recovered address does not match', library: lib });
  const s = BigInt('0x' + hex(raw.slice(32, 64)));
  const high = Uint8Array.from(raw);
  high.set(ethers.getBytes(ethers.toBeHex(N - s, 32)), 32);
  high[64] = raw[64] === 27 ? 28 : 27;
  let says = 'valid';
  try { ethers.verifyMessage(msg, ethers.hexlify(high)); } catch (e) { says = 'throws: ' + e.shortMessage; }
  add({ name: 'evm-neg-high-s', account_type: 'ETHEREUM_WALLET', address: w.address, message: msg, signature: ethers.hexlify(high), valid: false, expect_reason: 'signature s is not low (EIP-2)', library: lib, library_says: says });
  const v29 = Uint8Array.from(raw); v29[64] = 29;
  add({ name: 'evm-neg-v29', account_type: 'ETHEREUM_WALLET', address: w.address, message: msg, signature: ethers.hexlify(v29), valid: false, expect_reason: 'signature recovery byte v is not 27, 28, 0 or 1', library: lib });
  // Break EIP-55 by flipping the case of the first letter.
  const a = w.address; const idx = [...a.slice(2)].findIndex((c) => /[a-fA-F]/.test(c)) + 2;
  const flipped = a.slice(0, idx) + (a[idx] === a[idx].toLowerCase() ? a[idx].toUpperCase() : a[idx].toLowerCase()) + a.slice(idx + 1);
  add({ name: 'evm-neg-bad-eip55', account_type: 'ETHEREUM_WALLET', address: flipped, message: msg, signature: sig, valid: false, expect_reason: 'address fails its EIP-55 checksum', library: lib, library_says: 'ethers.getAddress throws bad address checksum' });
  add({ name: 'evm-neg-short-signature', account_type: 'ETHEREUM_WALLET', address: w.address, message: msg, signature: sig.slice(0, 130), valid: false, expect_reason: 'signature is not 65 bytes of hex', library: lib });
  // TRON signMessageV2 by the same key, presented as an EVM signature.
  const tronSig = Trx.signMessageV2(msg, hex(keyFor('evm-misc')));
  add({ name: 'evm-neg-tip191-signature', account_type: 'ETHEREUM_WALLET', address: w.address, message: msg, signature: tronSig, valid: false, expect_reason: 'recovered address does not match', library: 'tronweb@6.5.1', note: 'TRON signature of the same key must not verify as EIP-191' });
}

// ---------------------------------------------------------------- Solana
{
  const lib = 'tweetnacl@1.0.3+bs58@6.0.0';
  const kp = nacl.sign.keyPair.fromSeed(keyFor('solana'));
  const address = bs58.encode(kp.publicKey);
  const sign = (m) => nacl.sign.detached(Buffer.from(m, 'utf8'), kp.secretKey);
  for (const network of ['mainnet', 'devnet']) {
    const msg = challenge('solana-' + network, address, 'solana', network);
    const sig = sign(msg);
    must(nacl.sign.detached.verify(Buffer.from(msg), sig, kp.publicKey), 'solana');
    add({ name: `solana-${network}-challenge`, account_type: 'SOLANA_WALLET', address, message: msg, signature: bs58.encode(sig), valid: true, library: lib, self_check: true });
  }
  for (const [name, msg] of [['unicode', UNICODE], ['four-lines', FOUR_LINES], ['long', LONG]]) {
    const sig = sign(msg);
    must(nacl.sign.detached.verify(Buffer.from(msg), sig, kp.publicKey), 'solana ' + name);
    add({ name: `solana-${name}`, account_type: 'SOLANA_WALLET', address, message: msg, signature: bs58.encode(sig), valid: true, library: lib, self_check: true });
  }
  const msg = challenge('solana-variants', address, 'solana', 'mainnet');
  const sig = sign(msg);
  add({ name: 'solana-hex-signature', account_type: 'SOLANA_WALLET', address, message: msg, signature: hex(sig), valid: true, library: lib });
  add({ name: 'solana-base64-signature', account_type: 'SOLANA_WALLET', address, message: msg, signature: Buffer.from(sig).toString('base64'), valid: true, library: lib });
  const other = bs58.encode(nacl.sign.keyPair.fromSeed(keyFor('solana-other')).publicKey);
  add({ name: 'solana-neg-wrong-address', account_type: 'SOLANA_WALLET', address: other, message: msg, signature: bs58.encode(sig), valid: false, expect_reason: 'ed25519 signature does not verify for the address', library: lib });
  add({ name: 'solana-neg-wrong-message', account_type: 'SOLANA_WALLET', address, message: msg + ' ', signature: bs58.encode(sig), valid: false, expect_reason: 'ed25519 signature does not verify for the address', library: lib });
  add({ name: 'solana-neg-flipped-bit', account_type: 'SOLANA_WALLET', address, message: msg, signature: bs58.encode(flipByte(sig, 10)), valid: false, expect_reason: 'ed25519 signature does not verify for the address', library: lib });
  add({ name: 'solana-neg-truncated', account_type: 'SOLANA_WALLET', address, message: msg, signature: bs58.encode(sig.slice(0, 63)), valid: false, expect_reason: 'signature is not 64 bytes of base58, hex or base64', library: lib });
}

// ---------------------------------------------------------------- TRON
{
  const lib = 'tronweb@6.5.1';
  const priv = hex(keyFor('tron'));
  const address = TronWeb.address.fromPrivateKey(priv);
  for (const network of ['mainnet', 'nile']) {
    const msg = challenge('tron-' + network, address, 'tron', network);
    const sig = Trx.signMessageV2(msg, priv);
    must(Trx.verifyMessageV2(msg, sig) === address, 'tron');
    add({ name: `tron-${network}-challenge`, account_type: 'TRON_WALLET', address, message: msg, signature: sig, valid: true, library: lib, self_check: true });
  }
  for (const [name, msg] of [['unicode', UNICODE], ['long', LONG]]) {
    const sig = Trx.signMessageV2(msg, priv);
    must(Trx.verifyMessageV2(msg, sig) === address, 'tron ' + name);
    add({ name: `tron-${name}`, account_type: 'TRON_WALLET', address, message: msg, signature: sig, valid: true, library: lib, self_check: true });
  }
  const msg = challenge('tron-variants', address, 'tron', 'mainnet');
  const sig = Trx.signMessageV2(msg, priv);
  const other = TronWeb.address.fromPrivateKey(hex(keyFor('tron-other')));
  add({ name: 'tron-neg-wrong-address', account_type: 'TRON_WALLET', address: other, message: msg, signature: sig, valid: false, expect_reason: 'recovered address does not match', library: lib });
  add({ name: 'tron-neg-wrong-message', account_type: 'TRON_WALLET', address, message: msg.toUpperCase(), signature: sig, valid: false, expect_reason: 'recovered address does not match', library: lib });
  const evmSig = new ethers.Wallet('0x' + priv).signMessageSync(msg);
  add({ name: 'tron-neg-eip191-signature', account_type: 'TRON_WALLET', address, message: msg, signature: evmSig, valid: false, expect_reason: 'recovered address does not match', library: 'ethers@6.17.0', note: 'EIP-191 signature of the same key must not verify as TRON' });
  const v1 = Trx.signString(hex(Buffer.from(msg, 'utf8')), priv);
  add({ name: 'tron-neg-legacy-v1', account_type: 'TRON_WALLET', address, message: msg, signature: v1, valid: false, expect_reason: 'recovered address does not match', library: lib, note: 'legacy signString (fixed "32" header) is not accepted' });
  const badChecksum = address.slice(0, 33) + (address[33] === 'a' ? 'b' : 'a');
  add({ name: 'tron-neg-bad-checksum', account_type: 'TRON_WALLET', address: badChecksum, message: msg, signature: sig, valid: false, expect_reason: 'address fails its base58check checksum', library: lib });
}

// ---------------------------------------------------------------- Bitcoin
{
  const libMsg = 'bitcoinjs-message@2.2.0';
  const lib322 = 'bip322-js@3.0.0';
  const networks = { mainnet: bitcoin.networks.bitcoin, testnet: bitcoin.networks.testnet, regtest: bitcoin.networks.regtest };
  const addrs = (pub, net) => ({
    p2pkh: bitcoin.payments.p2pkh({ pubkey: pub, network: net }).address,
    p2sh: bitcoin.payments.p2sh({ redeem: bitcoin.payments.p2wpkh({ pubkey: pub, network: net }), network: net }).address,
    p2wpkh: bitcoin.payments.p2wpkh({ pubkey: pub, network: net }).address,
    p2tr: bitcoin.payments.p2tr({ internalPubkey: pub.subarray(1, 33), network: net }).address,
  });
  const keyPair = (label, compressed = true, net = bitcoin.networks.bitcoin) =>
    ECPair.fromPrivateKey(keyFor(label), { compressed, network: net });

  for (const network of ['mainnet', 'testnet']) {
    const net = networks[network];
    const kp = keyPair('btc-' + network, true, net);
    const A = addrs(kp.publicKey, net);
    // BIP-137 legacy and segwit headers (bitcoinjs-message).
    for (const [type, opt] of [['p2pkh', undefined], ['p2sh', { segwitType: 'p2sh(p2wpkh)' }], ['p2wpkh', { segwitType: 'p2wpkh' }]]) {
      const msg = challenge(`btc-${network}-${type}`, A[type], 'bitcoin', network);
      const sig = bitcoinMessage.sign(msg, kp.privateKey, true, opt).toString('base64');
      must(bitcoinMessage.verify(msg, A[type], sig), `btc ${network} ${type}`);
      add({ name: `btc-bip137-${network}-${type}`, account_type: 'BITCOIN_WALLET', network, address: A[type], message: msg, signature: sig, scheme: network === 'mainnet' ? '' : 'bip137', valid: true, library: libMsg, self_check: true });
    }
    // Electrum style: compressed P2PKH header for segwit addresses.
    for (const type of ['p2sh', 'p2wpkh']) {
      const msg = challenge(`btc-${network}-electrum-${type}`, A[type], 'bitcoin', network);
      const sig = bitcoinMessage.sign(msg, kp.privateKey, true).toString('base64');
      must(bitcoinMessage.verify(msg, A[type], sig, null, true), `btc electrum ${type}`);
      add({ name: `btc-electrum-${network}-${type}`, account_type: 'BITCOIN_WALLET', network, address: A[type], message: msg, signature: sig, scheme: 'electrum', valid: true, library: libMsg, self_check: true });
      if (network === 'mainnet') {
        add({ name: `btc-neg-electrum-header-under-bip137-${type}`, account_type: 'BITCOIN_WALLET', network, address: A[type], message: msg, signature: sig, scheme: 'bip137', valid: false, expect_reason: 'use signatureScheme electrum', library: libMsg, library_says: 'valid with checkSegwitAlways' });
      }
    }
    // BIP-322 simple (bip322-js).
    const wif = kp.toWIF();
    for (const type of ['p2wpkh', 'p2sh', 'p2tr']) {
      const msg = challenge(`btc-${network}-bip322-${type}`, A[type], 'bitcoin', network);
      const sig = BIP322Signer.sign(wif, A[type], msg);
      must(BIP322Verifier.verifySignature(A[type], msg, sig, true), `bip322 ${type}`);
      add({ name: `btc-bip322-${network}-${type}`, account_type: 'BITCOIN_WALLET', network, address: A[type], message: msg, signature: sig, scheme: type === 'p2tr' ? '' : 'bip322', valid: true, library: lib322, self_check: true, ...(type === 'p2tr' ? { note: 'bip322-js signs taproot with SIGHASH_ALL (65 bytes)' } : {}) });
    }
  }
  // Regtest: bech32 HRP bcrt.
  {
    const net = networks.regtest;
    const kp = keyPair('btc-regtest', true, net);
    const A = addrs(kp.publicKey, net);
    const msg = challenge('btc-regtest-bip322-p2wpkh', A.p2wpkh, 'bitcoin', 'regtest');
    const sig = BIP322Signer.sign(kp.toWIF(), A.p2wpkh, msg);
    must(BIP322Verifier.verifySignature(A.p2wpkh, msg, sig, true), 'bip322 regtest');
    add({ name: 'btc-bip322-regtest-p2wpkh', account_type: 'BITCOIN_WALLET', network: 'regtest', address: A.p2wpkh, message: msg, signature: sig, valid: true, library: lib322, self_check: true });
  }
  // Uncompressed P2PKH key (header 27-30).
  {
    const kp = keyPair('btc-uncompressed', false);
    const address = bitcoin.payments.p2pkh({ pubkey: kp.publicKey }).address;
    const msg = challenge('btc-uncompressed', address, 'bitcoin', 'mainnet');
    const sig = bitcoinMessage.sign(msg, kp.privateKey, false).toString('base64');
    must(bitcoinMessage.verify(msg, address, sig), 'btc uncompressed');
    add({ name: 'btc-bip137-mainnet-p2pkh-uncompressed', account_type: 'BITCOIN_WALLET', address, message: msg, signature: sig, valid: true, library: libMsg, self_check: true });
    const moved = Buffer.from(sig, 'base64'); moved[0] += 4;
    add({ name: 'btc-neg-uncompressed-header-moved', account_type: 'BITCOIN_WALLET', address, message: msg, signature: moved.toString('base64'), valid: false, expect_reason: 'recovered key does not match the address', library: libMsg, note: 'header moved from the uncompressed to the compressed range' });
  }
  // Other messages, a 64-byte taproot signature, and negatives on one key.
  {
    const net = networks.mainnet;
    const kp = keyPair('btc-misc');
    const A = addrs(kp.publicKey, net);
    for (const [name, msg] of [['unicode', UNICODE], ['long', LONG]]) {
      const sig = bitcoinMessage.sign(msg, kp.privateKey, true, { segwitType: 'p2wpkh' }).toString('base64');
      must(bitcoinMessage.verify(msg, A.p2wpkh, sig), 'btc ' + name);
      add({ name: `btc-bip137-${name}`, account_type: 'BITCOIN_WALLET', address: A.p2wpkh, message: msg, signature: sig, valid: true, library: libMsg, self_check: true });
      const sig322 = BIP322Signer.sign(kp.toWIF(), A.p2wpkh, msg);
      must(BIP322Verifier.verifySignature(A.p2wpkh, msg, sig322, true), 'bip322 ' + name);
      add({ name: `btc-bip322-${name}`, account_type: 'BITCOIN_WALLET', address: A.p2wpkh, message: msg, signature: sig322, valid: true, library: lib322, self_check: true });
    }
    // 64-byte SIGHASH_DEFAULT taproot signature: bip322-js's to_spend/to_sign
    // builders, signed by bitcoinjs-lib's Psbt with the default sighash.
    const msg = challenge('btc-p2tr-default', A.p2tr, 'bitcoin', 'mainnet');
    {
      const script = BIP322Address.convertAdressToScriptPubkey(A.p2tr);
      const toSpend = BIP322.buildToSpendTx(msg, script);
      const internal = kp.publicKey.subarray(1, 33);
      const toSign = BIP322.buildToSignTx(toSpend.getId(), script, false, internal);
      const tweaked = kp.tweak(bitcoin.crypto.taggedHash('TapTweak', internal));
      toSign.signAllInputs(tweaked).finalizeAllInputs();
      const sig = BIP322.encodeWitness(toSign);
      must(Buffer.from(sig, 'base64')[1] === 64, 'taproot default is 64 bytes');
      must(BIP322Verifier.verifySignature(A.p2tr, msg, sig, true), 'bip322 p2tr default');
      add({ name: 'btc-bip322-mainnet-p2tr-sighash-default', account_type: 'BITCOIN_WALLET', address: A.p2tr, message: msg, signature: sig, valid: true, library: 'bip322-js@3.0.0+bitcoinjs-lib@6.1.7', self_check: true, note: '64-byte Schnorr signature (SIGHASH_DEFAULT)' });
    }
    const msgW = challenge('btc-neg', A.p2wpkh, 'bitcoin', 'mainnet');
    const sigW = bitcoinMessage.sign(msgW, kp.privateKey, true, { segwitType: 'p2wpkh' }).toString('base64');
    const sig322W = BIP322Signer.sign(kp.toWIF(), A.p2wpkh, msgW);
    const sigP2SH = bitcoinMessage.sign(msgW, kp.privateKey, true, { segwitType: 'p2sh(p2wpkh)' }).toString('base64');
    const sig322T = BIP322Signer.sign(kp.toWIF(), A.p2tr, msgW);
    const otherA = addrs(keyPair('btc-other').publicKey, net);
    const testA = addrs(kp.publicKey, networks.testnet);
    const bip322Says = (addr, m, s) => { try { return BIP322Verifier.verifySignature(addr, m, s) ? 'valid' : 'invalid'; } catch (e) { return 'throws: ' + e.message; } };
    add({ name: 'btc-neg-wrong-address', account_type: 'BITCOIN_WALLET', address: otherA.p2wpkh, message: msgW, signature: sigW, valid: false, expect_reason: 'recovered key does not match the address', library: libMsg });
    add({ name: 'btc-neg-wrong-message', account_type: 'BITCOIN_WALLET', address: A.p2wpkh, message: msgW + '\n', signature: sigW, valid: false, expect_reason: 'recovered key does not match the address', library: libMsg });
    add({ name: 'btc-neg-p2sh-header-for-p2wpkh-address', account_type: 'BITCOIN_WALLET', address: A.p2wpkh, message: msgW, signature: sigP2SH, valid: false, expect_reason: 'signature header is for another address type than P2WPKH', library: libMsg, library_says: bip322Says(A.p2wpkh, msgW, sigP2SH) });
    add({ name: 'btc-neg-testnet-address', account_type: 'BITCOIN_WALLET', address: testA.p2wpkh, message: msgW, signature: sigW, valid: false, expect_reason: 'testnet address under mainnet configuration', library: libMsg, library_says: bitcoinMessage.verify(msgW, testA.p2wpkh, sigW) ? 'valid' : 'invalid' });
    add({ name: 'btc-neg-bip137-for-taproot', account_type: 'BITCOIN_WALLET', address: A.p2tr, message: msgW, signature: sigW, valid: false, expect_reason: 'BIP-137 has no taproot header', library: libMsg, library_says: bip322Says(A.p2tr, msgW, sigW) });
    add({ name: 'btc-neg-taproot-witness-for-p2wpkh', account_type: 'BITCOIN_WALLET', address: A.p2wpkh, message: msgW, signature: sig322T, valid: false, expect_reason: 'P2WPKH witness is not a signature and a 33-byte public key', library: lib322 });
    add({ name: 'btc-neg-p2wpkh-witness-for-taproot', account_type: 'BITCOIN_WALLET', address: A.p2tr, message: msgW, signature: sig322W, valid: false, expect_reason: 'only taproot key-path signatures', library: lib322 });
    const corrupt = Buffer.from(sig322W, 'base64'); corrupt[20] ^= 0x01;
    add({ name: 'btc-neg-bip322-corrupt-witness', account_type: 'BITCOIN_WALLET', address: A.p2wpkh, message: msgW, signature: corrupt.toString('base64'), valid: false, expect_reason: 'BIP-322 signature does not verify for the address', library: lib322 });
    add({ name: 'btc-neg-bip322-wrong-message', account_type: 'BITCOIN_WALLET', address: A.p2wpkh, message: msgW.replaceAll('\n', '\r\n'), signature: sig322W, valid: false, expect_reason: 'BIP-322 signature does not verify for the address', library: lib322 });
    add({ name: 'btc-neg-bip322-other-address', account_type: 'BITCOIN_WALLET', address: otherA.p2wpkh, message: msgW, signature: sig322W, valid: false, expect_reason: 'BIP-322 signature does not verify for the address', library: lib322 });
    add({ name: 'btc-neg-flipped-bit', account_type: 'BITCOIN_WALLET', address: A.p2wpkh, message: msgW, signature: flipByte(Buffer.from(sigW, 'base64'), 40).toString('base64'), valid: false, expect_reason: 'recovered key does not match the address', library: libMsg });
    add({ name: 'btc-neg-unknown-scheme', account_type: 'BITCOIN_WALLET', address: A.p2wpkh, message: msgW, signature: sigW, scheme: 'bip999', valid: false, expect_reason: 'unknown signature scheme', library: libMsg });
  }
  // Published BIP-322 vectors (bitcoin/bips bip-0322/basic-test-vectors.json).
  const bipP2WPKH = 'bc1q9vza2e8x573nczrlzms0wvx3gsqjx7vavgkx0l';
  const bipP2TR = 'bc1ppv609nr0vr25u07u95waq5lucwfm6tde4nydujnu8npg4q75mr5sxq8lt3';
  const published = [
    ['empty', bipP2WPKH, '', 'AkcwRAIgM2gBAQqvZX15ZiysmKmQpDrG83avLIT492QBzLnQIxYCIBaTpOaD20qRlEylyxFSeEA2ba9YOixpX8z46TSDtS40ASECx/EgAxlkQpQ9hYjgGu6EBCPMVPwVIVJqO4XCsMvViHI='],
    ['empty-high-r', bipP2WPKH, '', 'AkgwRQIhAPkJ1Q4oYS0htvyuSFHLxRQpFAY56b70UvE7Dxazen0ZAiAtZfFz1S6T6I23MWI2lK/pcNTWncuyL8UL+oMdydVgzAEhAsfxIAMZZEKUPYWI4BruhAQjzFT8FSFSajuFwrDL1Yhy'],
    ['hello', bipP2WPKH, 'Hello World', 'AkcwRAIgZRfIY3p7/DoVTty6YZbWS71bc5Vct9p9Fia83eRmw2QCICK/ENGfwLtptFluMGs2KsqoNSk89pO7F29zJLUx9a/sASECx/EgAxlkQpQ9hYjgGu6EBCPMVPwVIVJqO4XCsMvViHI='],
    ['hello-high-r', bipP2WPKH, 'Hello World', 'AkgwRQIhAOzyynlqt93lOKJr+wmmxIens//zPzl9tqIOua93wO6MAiBi5n5EyAcPScOjf1lAqIUIQtr3zKNeavYabHyR8eGhowEhAsfxIAMZZEKUPYWI4BruhAQjzFT8FSFSajuFwrDL1Yhy'],
    ['hello-smp-prefix', bipP2WPKH, 'Hello World', 'smpAkcwRAIgZRfIY3p7/DoVTty6YZbWS71bc5Vct9p9Fia83eRmw2QCICK/ENGfwLtptFluMGs2KsqoNSk89pO7F29zJLUx9a/sASECx/EgAxlkQpQ9hYjgGu6EBCPMVPwVIVJqO4XCsMvViHI='],
    ['p2tr-hello', bipP2TR, 'Hello World', 'AUHd69PrJQEv+oKTfZ8l+WROBHuy9HKrbFCJu7U1iK2iiEy1vMU5EfMtjc+VSHM7aU0SDbak5IUZRVno2P5mjSafAQ=='],
  ];
  for (const [name, address, msg, sig] of published) {
    let ok;
    try { ok = BIP322Verifier.verifySignature(address, msg, sig, true); } catch { ok = false; }
    add({ name: `btc-bip322-official-${name}`, account_type: 'BITCOIN_WALLET', address, message: msg, signature: sig, valid: true, library: 'bitcoin/bips bip-0322', self_check: ok, note: ok ? 'published vector' : 'published vector; bip322-js 3.0.0 cannot parse it' });
  }
}

// ---------------------------------------------------------------- Spark
{
  const lib = '@buildonspark/spark-sdk@0.8.8';
  const sparkNet = { mainnet: 'MAINNET', regtest: 'REGTEST', testnet: 'TESTNET', signet: 'SIGNET' };
  const signerFor = async (label) => {
    const signer = new DefaultSparkSigner();
    const pub = await signer.createSparkWalletFromSeed(hex(keyFor(label)), 1);
    return { signer, pub };
  };
  // As SparkWallet.signMessageWithIdentityKey: sha256(utf8(message)), then sign.
  const signSpark = async (signer, msg, compact) =>
    hex(await signer.signMessageWithIdentityKey(sha256(Buffer.from(msg, 'utf8')), compact));
  const verifySpark = async (signer, msg, sigHex) =>
    signer.validateMessageWithIdentityKey(sha256(Buffer.from(msg, 'utf8')), Buffer.from(sigHex, 'hex'));

  for (const network of ['mainnet', 'regtest', 'testnet', 'signet']) {
    const { signer, pub } = await signerFor('spark-' + network);
    const address = encodeSparkAddress({ identityPublicKey: pub, network: sparkNet[network] });
    const msg = challenge('spark-' + network, address, 'spark', network);
    for (const compact of [false, true]) {
      const sig = await signSpark(signer, msg, compact);
      must(await verifySpark(signer, msg, sig), 'spark');
      add({ name: `spark-${network}-${compact ? 'compact' : 'der'}`, account_type: 'SPARK_WALLET', network, address, message: msg, signature: sig, valid: true, library: lib, self_check: true });
    }
  }
  const { signer, pub } = await signerFor('spark-misc');
  const address = encodeSparkAddress({ identityPublicKey: pub, network: 'MAINNET' });
  for (const [name, msg] of [['unicode', UNICODE], ['long', LONG]]) {
    const sig = await signSpark(signer, msg, false);
    must(await verifySpark(signer, msg, sig), 'spark ' + name);
    add({ name: `spark-${name}`, account_type: 'SPARK_WALLET', address, message: msg, signature: sig, valid: true, library: lib, self_check: true });
  }
  const msg = challenge('spark-variants', address, 'spark', 'mainnet');
  const der = await signSpark(signer, msg, false);
  const compact = await signSpark(signer, msg, true);
  add({ name: 'spark-der-base64', account_type: 'SPARK_WALLET', address, message: msg, signature: Buffer.from(der, 'hex').toString('base64'), valid: true, library: lib, note: 'base64 as Xverse spark_signMessage returns it' });
  add({ name: 'spark-compact-base64', account_type: 'SPARK_WALLET', address, message: msg, signature: Buffer.from(compact, 'hex').toString('base64'), valid: true, library: lib });
  const { words } = bech32m.decode(address, 1024);
  const legacy = bech32m.encode('sp', words, 1024);
  add({ name: 'spark-legacy-sp-prefix', account_type: 'SPARK_WALLET', address: legacy, message: msg, signature: der, valid: true, library: lib + '+bech32@2.0.0', note: 'older SDKs used the sp prefix' });
  const regtestAddress = encodeSparkAddress({ identityPublicKey: pub, network: 'REGTEST' });
  add({ name: 'spark-neg-regtest-address', account_type: 'SPARK_WALLET', network: 'mainnet', address: regtestAddress, message: msg, signature: der, valid: false, expect_reason: 'regtest address under mainnet configuration', library: lib });
  const other = encodeSparkAddress({ identityPublicKey: (await signerFor('spark-other')).pub, network: 'MAINNET' });
  add({ name: 'spark-neg-wrong-address', account_type: 'SPARK_WALLET', address: other, message: msg, signature: der, valid: false, expect_reason: 'ecdsa signature does not verify for the identity key', library: lib });
  add({ name: 'spark-neg-wrong-message', account_type: 'SPARK_WALLET', address, message: msg.replace('walletgate', 'walletgat3'), signature: compact, valid: false, expect_reason: 'ecdsa signature does not verify for the identity key', library: lib });
  const c = Buffer.from(compact, 'hex');
  const s = BigInt('0x' + hex(c.subarray(32)));
  const high = Buffer.concat([c.subarray(0, 32), Buffer.from((N - s).toString(16).padStart(64, '0'), 'hex')]);
  add({ name: 'spark-neg-high-s', account_type: 'SPARK_WALLET', address, message: msg, signature: hex(high), valid: false, expect_reason: 'signature s is not low', library: lib, library_says: (await verifySpark(signer, msg, hex(high))) ? 'valid' : 'invalid' });
  // An Ethereum personal_sign (65 bytes r‖s‖v) is not a Spark signature encoding.
  const evm = new ethers.Wallet(ethers.hexlify(keyFor('spark-evm'))).signMessageSync(msg);
  add({ name: 'spark-neg-evm-signature', account_type: 'SPARK_WALLET', address, message: msg, signature: evm, valid: false, expect_reason: 'signature is not hex or base64 of a DER or 64-byte compact ECDSA signature', library: 'ethers@6.17.0' });
}

// ---------------------------------------------------------------- Lightning (LND signmessage format)
{
  const lib = '@noble/curves@2.4.0+zbase32@2.0.3';
  const lnHash = (msg) => sha256(sha256(Buffer.concat([Buffer.from('Lightning Signed Message:'), Buffer.from(msg, 'utf8')])));
  const signLN = (priv, msg) => {
    const rec = secp256k1.sign(lnHash(msg), priv, { prehash: false, format: 'recovered' });
    const out = Buffer.alloc(65);
    out[0] = 31 + rec[0];
    out.set(rec.subarray(1), 1);
    return zbase32.encode(out);
  };
  const priv = keyFor('lightning');
  const node = hex(secp256k1.getPublicKey(priv, true));
  const msg = challenge('lightning', node, 'lightning', 'mainnet');
  const sig = signLN(priv, msg);
  const back = Buffer.from(zbase32.decode(sig));
  const recovered = secp256k1.Signature.fromBytes(back.subarray(1), 'compact').addRecoveryBit(back[0] - 31).recoverPublicKey(lnHash(msg)).toBytes(true);
  must(hex(recovered) === node, 'lightning');
  add({ name: 'ln-node-challenge', account_type: 'LIGHTNING', address: node, message: msg, signature: sig, valid: true, library: lib, self_check: true });
  add({ name: 'ln-node-unicode', account_type: 'LIGHTNING', address: node, message: UNICODE, signature: signLN(priv, UNICODE), valid: true, library: lib });
  const otherNode = hex(secp256k1.getPublicKey(keyFor('lightning-other'), true));
  add({ name: 'ln-neg-wrong-node', account_type: 'LIGHTNING', address: otherNode, message: msg, signature: sig, valid: false, expect_reason: 'recovered key does not match the node id', library: lib });
  const single = secp256k1.sign(sha256(Buffer.concat([Buffer.from('Lightning Signed Message:'), Buffer.from(msg)])), priv, { prehash: false, format: 'recovered' });
  const singleOut = Buffer.alloc(65); singleOut[0] = 31 + single[0]; singleOut.set(single.subarray(1), 1);
  add({ name: 'ln-neg-single-hash', account_type: 'LIGHTNING', address: node, message: msg, signature: zbase32.encode(singleOut), valid: false, expect_reason: 'recovered key does not match the node id', library: lib, note: 'LND single_hash=true is not the default format' });
}

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url)));
process.stdout.write(JSON.stringify({
  description: 'Wallet signature vectors for package ownership, made by generate.mjs with the libraries listed. Keys are public test keys.',
  libraries: pkg.dependencies,
  vectors,
}, null, 2) + '\n');
