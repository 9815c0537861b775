package sandbox

// SandboxMnemonic is the BIP-39 mnemonic every sandbox wallet exports: the
// well-known all-"abandon" test phrase, which holds no funds anywhere.
const SandboxMnemonic = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"

// SandboxOrganizationID is the organizationId written into export
// envelopes (and OTP target bundles): the walletauth service's
// OrganizationID.
const SandboxOrganizationID = "org_sandbox"
