package sandbox

// SandboxMnemonic is the BIP-39 mnemonic every sandbox wallet exports: the
// well-known all-"abandon" test phrase, which holds no funds anywhere.
const SandboxMnemonic = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"

// SandboxOrganizationID is the one organizationId of every envelope the
// sandbox issues: the OTP target bundles (of challenges and of added
// credentials) and the export envelopes. It is the walletauth service's
// OrganizationID and not configurable. encryptedSessionSigningKey (a bare
// HPKE ciphertext) carries no organizationId.
const SandboxOrganizationID = "org_sandbox"
