// Compiles contracts/*.sol with the solc-js pinned in package-lock.json and
// writes contracts.json: per contract its ABI and creation bytecode, with the
// compiler version and settings that produced them. The creation code of
// SignatureCheck, which the verifier itself runs, is also written to
// ../signaturecheck.json, embedded in the Go package.
//
//   npm ci && node build.js
'use strict';
const fs = require('fs');
const path = require('path');
const solc = require('solc');

const dir = path.join(__dirname, 'contracts');
const sources = {};
for (const name of fs.readdirSync(dir).filter((f) => f.endsWith('.sol')).sort()) {
  sources[name] = { content: fs.readFileSync(path.join(dir, name), 'utf8') };
}
const settings = {
  evmVersion: 'cancun',
  optimizer: { enabled: true, runs: 200 },
  outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
};
const out = JSON.parse(solc.compile(JSON.stringify({ language: 'Solidity', sources, settings })));
const errors = (out.errors || []).filter((e) => e.severity === 'error');
if (errors.length > 0) {
  for (const e of errors) console.error(e.formattedMessage);
  process.exit(1);
}
for (const w of out.errors || []) console.error(w.formattedMessage);
const contracts = {};
for (const file of Object.keys(out.contracts).sort()) {
  for (const name of Object.keys(out.contracts[file]).sort()) {
    const c = out.contracts[file][name];
    contracts[name] = { source: 'contracts/' + file, abi: c.abi, bytecode: '0x' + c.evm.bytecode.object };
  }
}
const result = { compiler: 'solc-js ' + solc.version(), settings: { evmVersion: settings.evmVersion, optimizer: settings.optimizer }, contracts };
fs.writeFileSync(path.join(__dirname, 'contracts.json'), JSON.stringify(result, null, 2) + '\n');
const check = { compiler: result.compiler, settings: result.settings, source: 'testdata/' + contracts.SignatureCheck.source,
  bytecode: contracts.SignatureCheck.bytecode };
fs.writeFileSync(path.join(__dirname, '..', 'signaturecheck.json'), JSON.stringify(check, null, 2) + '\n');
console.log('wrote contracts.json with', Object.keys(contracts).join(', '), 'using', result.compiler);
