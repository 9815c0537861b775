package authclient

import (
	"time"

	"github.com/walletgate/walletgate/storage"
)

// Operation types of the service's signed routes, as the type member of
// their payloads names them: the Type of the signedretry/stamper
// Expectation a client checks a payloadToSign with.
const (
	OpAddCredential    = "ADD_CREDENTIAL"        // POST /auth/credentials
	OpRevokeCredential = "REVOKE_CREDENTIAL"     // DELETE /auth/credentials/{id}
	OpVerifyOTP        = "VERIFY_OTP"            // POST /auth/credentials/{id}/verify, one-time codes
	OpRevokeSession    = "REVOKE_SESSION"        // DELETE /auth/sessions/{id}
	OpRefreshSession   = "REFRESH_SESSION"       // POST /auth/sessions/{id}/refresh
	OpUpdateEmail      = "UPDATE_EMAIL"          // a change of the customer's email
	OpExportWallet     = "EXPORT_WALLET"         // a wallet export
	OpWalletPrivacy    = "UPDATE_WALLET_PRIVACY" // a wallet privacy update
)

// AuthMethod is a credential as clients see it.
type AuthMethod struct {
	ID        string                 `json:"id"`
	AccountID string                 `json:"accountId"`
	Type      storage.CredentialType `json:"type"`
	Nickname  string                 `json:"nickname"`
	// CredentialID is the base64url WebAuthn credential id (PASSKEY only).
	CredentialID string    `json:"credentialId,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
	// OTPEncryptionTargetBundle is set when a one-time code was just issued
	// for the credential.
	OTPEncryptionTargetBundle string `json:"otpEncryptionTargetBundle,omitempty"`
}

// AuthSession is a session as clients see it.
type AuthSession struct {
	ID        string                 `json:"id"`
	AccountID string                 `json:"accountId"`
	Type      storage.CredentialType `json:"type"`
	Nickname  string                 `json:"nickname"`
	CreatedAt time.Time              `json:"createdAt"`
	UpdatedAt time.Time              `json:"updatedAt"`
	// AuthenticatedAt is when the ceremony that authenticated the session
	// took place (the code, assertion or token verified); a refreshed
	// session keeps the time of the one it replaced.
	AuthenticatedAt time.Time `json:"authenticatedAt"`
	ExpiresAt       time.Time `json:"expiresAt"`
	// EncryptedSessionSigningKey is the session private key sealed to the
	// client's key, returned once, on OAUTH and PASSKEY verification and on
	// refresh when the server generated the key.
	EncryptedSessionSigningKey string `json:"encryptedSessionSigningKey,omitempty"`
}

// AddCredentialRequest is the body of POST /auth/credentials.
type AddCredentialRequest struct {
	Type      storage.CredentialType `json:"type"`
	AccountID string                 `json:"accountId"`
	// OIDCToken is the OpenID Connect ID token (OAUTH).
	OIDCToken string `json:"oidcToken,omitempty"`
	// Nickname, Challenge and Attestation register a passkey (PASSKEY).
	Nickname    string       `json:"nickname,omitempty"`
	Challenge   string       `json:"challenge,omitempty"`
	Attestation *Attestation `json:"attestation,omitempty"`
}

// AddParams are the parameters of an ADD_CREDENTIAL payload: every value the
// credential is created from, so that a wallet showing the payload shows
// exactly what will be added.
type AddParams struct {
	Type     storage.CredentialType `json:"type"`
	Nickname string                 `json:"nickname"`
	// Email is the address an EMAIL_OTP credential is tied to.
	Email string `json:"email,omitempty"`
	// Phone is the number an SMS_OTP credential sends codes to.
	Phone string `json:"phone,omitempty"`
	// Issuer, Audience and Subject are the OpenID Connect identity of an
	// OAUTH credential, and OIDCTokenSHA256 the lowercase hex SHA-256 of
	// the ID token that asserted it.
	Issuer          string `json:"issuer,omitempty"`
	Audience        string `json:"audience,omitempty"`
	Subject         string `json:"subject,omitempty"`
	OIDCTokenSHA256 string `json:"oidcTokenSha256,omitempty"`
	// Passkey is the verified WebAuthn credential of a PASSKEY credential.
	Passkey *PasskeyParams `json:"passkey,omitempty"`
}

// PasskeyParams are the verified registration of a passkey as a payload
// carries it; binary values are base64url without padding.
type PasskeyParams struct {
	// CredentialID is the WebAuthn credential id.
	CredentialID string `json:"credentialId"`
	// RegistrationChallenge is the challenge the attestation answered; the
	// retry consumes it.
	RegistrationChallenge string `json:"registrationChallenge"`
	// PublicKey is the COSE public key.
	PublicKey       string   `json:"publicKey"`
	AttestationType string   `json:"attestationType"`
	AAGUID          string   `json:"aaguid"`
	SignCount       uint32   `json:"signCount"`
	Transports      []string `json:"transports,omitempty"`
	UserPresent     bool     `json:"userPresent"`
	UserVerified    bool     `json:"userVerified"`
	BackupEligible  bool     `json:"backupEligible"`
	BackupState     bool     `json:"backupState"`
}

// ChallengeRequest is the body of POST /auth/credentials/{id}/challenge.
type ChallengeRequest struct {
	// ClientPublicKey is the hex P-256 key a passkey session binds
	// (PASSKEY only; ignored for one-time codes).
	ClientPublicKey string `json:"clientPublicKey,omitempty"`
}

// ChallengeResponse is the answer to a challenge: the credential, with the
// OTP target bundle for one-time codes, or with the WebAuthn challenge, its
// Request-Id and expiry for passkeys.
type ChallengeResponse struct {
	AuthMethod
	// Challenge is the lowercase hex challenge of a passkey; the browser
	// signs its UTF-8 bytes.
	Challenge string     `json:"challenge,omitempty"`
	RequestID string     `json:"requestId,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// VerifyRequest is the body of POST /auth/credentials/{id}/verify.
type VerifyRequest struct {
	Type storage.CredentialType `json:"type"`
	// EncryptedOTPBundle answers a one-time code (EMAIL_OTP, SMS_OTP).
	EncryptedOTPBundle string `json:"encryptedOtpBundle,omitempty"`
	// OIDCToken and ClientPublicKey verify an OAUTH credential.
	OIDCToken       string `json:"oidcToken,omitempty"`
	ClientPublicKey string `json:"clientPublicKey,omitempty"`
	// Assertion verifies a passkey; the Request-Id of its challenge travels
	// in the call's RequestID.
	Assertion *Assertion `json:"assertion,omitempty"`
}

// RefreshRequest is the body of POST /auth/sessions/{id}/refresh, the same
// on both legs.
type RefreshRequest struct {
	ClientPublicKey string `json:"clientPublicKey"`
}

// ExportRequest is the body of a wallet export.
type ExportRequest struct {
	// ClientPublicKey is the P-256 key, compressed (66 hex characters) or
	// uncompressed (130), the wallet's secret is sealed to.
	ClientPublicKey string `json:"clientPublicKey"`
}

// WalletExport is the result of a completed export.
type WalletExport struct {
	ID string `json:"id"`
	// EncryptedWalletCredentials is the export bundle
	// ([envelope.NewExportBundle]; [envelope.OpenExportBundle] opens it): a
	// JSON string
	// {"version","data","dataSignature","enclaveQuorumPublic"} whose data is
	// hex of {"encappedPublic","ciphertext","organizationId"}; the
	// ciphertext is the wallet's secret sealed (HPKE) to the signed
	// clientPublicKey. dataSignature is hex DER ECDSA-P256-SHA256 over the
	// data bytes by the service's bundle signing key and
	// enclaveQuorumPublic the hex of its uncompressed public key, the same
	// key that signs OTP target bundles, which a client pins. @turnkey/crypto's decryptExportBundle
	// opens it when given that key as dangerouslyOverrideSignerPublicKey.
	EncryptedWalletCredentials string `json:"encryptedWalletCredentials"`
}

// PrivacyRequest is the body of a wallet privacy update.
type PrivacyRequest struct {
	PrivateEnabled *bool `json:"privateEnabled"`
}
