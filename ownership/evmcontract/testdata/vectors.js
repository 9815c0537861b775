// Generates vectors.json: contract-wallet ownership proofs made with ethers
// (the owner's EIP-191 personal_sign, ERC-6492 wrapping with ethers' ABI
// coder, and a 2-of-3 Safe-style message signature: each owner's EIP-712
// signTypedData of SafeMessage{message: abi.encode(hash)} over the domain
// {chainId, verifyingContract}, concatenated by ascending owner address, as
// Safe's clients build it), for the contracts of contracts.json deployed on
// a fresh chain by the deployer below: WalletFactory at nonce 0,
// OwnerWallet(owner) at nonce 1, SafeStyleWallet(safeOwners, 2) at nonce 2.
//
//   npm ci && node vectors.js
//
// Keys are public test keys: never fund them.
'use strict';
const fs = require('fs');
const path = require('path');
const ethers = require('ethers');

const compiled = JSON.parse(fs.readFileSync(path.join(__dirname, 'contracts.json'), 'utf8'));
const deployer = new ethers.Wallet('0x8a1f9a8f95be41cd7ccb6168179afb4504aefe388d1e14474d32c45c72ce7b7a');
const owner = new ethers.Wallet(ethers.keccak256(ethers.toUtf8Bytes('walletgate-vector-contract-owner')));
const chainId = 1; // Ethereum mainnet: the chain of ETHEREUM_WALLET contract accounts
const factory = ethers.getCreateAddress({ from: deployer.address, nonce: 0 });
const wallet = ethers.getCreateAddress({ from: deployer.address, nonce: 1 });
const safe = ethers.getCreateAddress({ from: deployer.address, nonce: 2 });
const safeOwners = ['a', 'b', 'c'].map((l) => new ethers.Wallet(ethers.keccak256(ethers.toUtf8Bytes('walletgate-vector-safe-owner-' + l))));
const coder = ethers.AbiCoder.defaultAbiCoder();
const suffix = '0x' + '6492'.repeat(16);

function message(address) {
  return [
    'walletgate asks you to prove that you control this wallet.',
    'Signing this message is free and authorizes nothing.',
    '',
    'Service: walletgate',
    'Address: ' + address,
    'Network: Ethereum mainnet',
    'Chain ID: ' + chainId,
    'Account: ExternalAccount:2f0c3a8e-4b1d-4e6f-9a7c-5d3b1e0f8a26',
    'Nonce: k3x7q2m9v4t8w1z6y5r0p3n2la',
    'Issued At: 2026-11-25T12:00:00Z',
    'Expiration Time: 2026-11-25T12:30:00Z',
  ].join('\n');
}

async function main() {
  const vectors = [];

  const m1 = message(wallet);
  const s1 = await owner.signMessage(m1);
  if (ethers.verifyMessage(m1, s1) !== owner.address) throw new Error('ethers does not verify its own signature');
  vectors.push({ name: 'deployed OwnerWallet, owner signs with ethers signMessage', chainId, address: wallet, message: m1, signature: s1 });

  const salt = ethers.zeroPadValue('0x2a', 32);
  const init = ethers.concat([compiled.contracts.OwnerWallet.bytecode, coder.encode(['address'], [owner.address])]);
  const counterfactual = ethers.getCreate2Address(factory, salt, ethers.keccak256(init));
  const calldata = new ethers.Interface(compiled.contracts.WalletFactory.abi).encodeFunctionData('deploy', [owner.address, salt]);
  const m2 = message(counterfactual);
  const s2 = await owner.signMessage(m2);
  const wrapped = ethers.concat([coder.encode(['address', 'bytes', 'bytes'], [factory, calldata, s2]), suffix]);
  vectors.push({ name: 'counterfactual OwnerWallet, ERC-6492 wrapped with ethers AbiCoder', chainId, address: counterfactual, message: m2, signature: wrapped });

  // Safe-style: two of the three owners sign the SafeMessage of the hash.
  const m3 = message(safe);
  const domain = { chainId, verifyingContract: safe };
  const types = { SafeMessage: [{ name: 'message', type: 'bytes' }] };
  const value = { message: coder.encode(['bytes32'], [ethers.hashMessage(m3)]) };
  const signers = [safeOwners[2], safeOwners[0]].sort((x, y) => (BigInt(x.address) < BigInt(y.address) ? -1 : 1));
  const parts = [];
  for (const s of signers) {
    const sig = await s.signTypedData(domain, types, value);
    if (ethers.verifyTypedData(domain, types, value, sig) !== s.address) throw new Error('ethers does not verify its typed signature');
    parts.push(sig);
  }
  vectors.push({ name: 'Safe-style 2-of-3 wallet, owners sign SafeMessage with ethers signTypedData', chainId, address: safe, message: m3,
    signature: ethers.concat(parts) });

  const out = {
    generator: 'ethers ' + ethers.version,
    deployer: deployer.address,
    owner: owner.address,
    factory,
    safeOwners: safeOwners.map((w) => w.address),
    safeThreshold: 2,
    vectors,
  };
  fs.writeFileSync(path.join(__dirname, 'vectors.json'), JSON.stringify(out, null, 2) + '\n');
  console.log('wrote vectors.json with', vectors.length, 'vectors using', out.generator);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
