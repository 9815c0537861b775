// The client libraries examples/web uses in the browser, re-exported for one
// ESM bundle (../../web/vendor.js, made by `npm run build` with the esbuild
// pinned in package.json; bundle_test.go checks the committed file is what
// this entry builds to). The page's own modules import from that bundle.
export { ApiKeyStamper } from "@turnkey/api-key-stamper";
export { encryptOtpCodeToBundle, generateP256KeyPair, getPublicKey } from "@turnkey/crypto";
export { uint8ArrayFromHexString, uint8ArrayToHexString } from "@turnkey/encoding";
export { Wallet, verifyMessage } from "ethers";
