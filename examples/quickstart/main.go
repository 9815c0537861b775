// Command quickstart runs, in process and in a few seconds, every main flow a
// platform performs against the walletgate sandbox, printing each step:
//
//	go run ./examples/quickstart
//
// It starts the sandbox simulator on a local test server and talks to it over
// HTTP with examples/client, as a platform backend would talk to the service:
// a customer with an embedded wallet, an EMAIL_OTP login with real HPKE and
// signatures, adding a passkey and an OAuth credential through signed
// retries, revoking a credential, a signed wallet export, ownership
// verification of an Ethereum and a Solana wallet, and the payout gate
// refusing the Ethereum wallet before its proof and allowing it after.
package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/examples/client"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/oidc"
	"github.com/walletgate/walletgate/walletauth/secret"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart failed:", err)
		os.Exit(1)
	}
}

// step prints one line of the transcript.
func step(format string, args ...any) { fmt.Printf("• "+format+"\n", args...) }

func run(ctx context.Context) error {
	// The keys OTP issuances are stored under: the code as an HMAC-SHA256,
	// the HPKE target private key sealed with AES-256-GCM. Generated for this
	// run (the sandbox would generate them itself); a production service
	// loads them from its secret manager and shares them between replicas.
	sealKey, err := secret.GenerateKey(nil, "quickstart-1")
	if err != nil {
		return err
	}
	keys, err := secret.NewKeyring(sealKey)
	if err != nil {
		return err
	}
	codeMACKey := make([]byte, walletauth.MinCodeMACKeyLen)
	if _, err := rand.Read(codeMACKey); err != nil {
		return err
	}
	sim, err := sandbox.New(sandbox.Config{Sealer: keys, CodeMACKey: codeMACKey})
	if err != nil {
		return err
	}
	defer sim.Close()
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	c := client.New(srv.URL+sim.BasePath(), sandbox.DefaultClientID, sandbox.DefaultClientSecret)
	// The client pins the service's bundle signing key, as a wallet pins the
	// enclave key: OTP target bundles and export bundles signed by any other
	// key are refused.
	c.BundleSigner, c.OrganizationID = sim.Auth().SigningPublicKey(), sandbox.SandboxOrganizationID
	start := time.Now()
	fmt.Printf("walletgate sandbox at %s%s\n\n", srv.URL, sim.BasePath())

	// 1. A customer; the sandbox provisions its embedded wallet with an
	// EMAIL_OTP credential tied to the customer's email.
	var cust sandbox.Customer
	if _, err := c.Do(ctx, "POST", "/customers", map[string]any{"customerType": "INDIVIDUAL", "fullName": "Ada Lovelace",
		"email": "ada@example.com", "birthDate": "1990-12-10", "nationality": "GB"}, nil, &cust); err != nil {
		return fmt.Errorf("create customer: %w", err)
	}
	var wallets struct{ Data []sandbox.InternalAccount }
	if _, err := c.Do(ctx, "GET", "/internal-accounts?customerId="+cust.ID, nil, nil, &wallets); err != nil {
		return err
	}
	wallet := wallets.Data[0].ID
	step("customer %s created with embedded wallet %s", cust.ID, wallet)

	var creds struct{ Data []walletauth.AuthMethod }
	if _, err := c.Do(ctx, "GET", "/auth/credentials?accountId="+wallet, nil, nil, &creds); err != nil {
		return err
	}
	emailCred := creds.Data[0]
	step("the wallet starts with one credential: %s %s (%s)", emailCred.Type, emailCred.ID, emailCred.Nickname)

	// 2. EMAIL_OTP login: the code is sealed to the server's HPKE target
	// (its bundle signed by the pinned key), leg 1 answers a payload, the
	// client checks it is the VERIFY_OTP of this credential for its key, the
	// device key stamps it and becomes the session key.
	sess, sessionKey, err := c.LoginOTP(ctx, wallet, emailCred.ID, storage.EmailOTP, walletauth.SandboxOTPCode)
	if err != nil {
		return fmt.Errorf("EMAIL_OTP login: %w", err)
	}
	step("EMAIL_OTP login: session %s, key %s…, expires %s", sess.ID, sessionKey.PublicKeyHex()[:16], sess.ExpiresAt.Format(time.RFC3339))

	// 3. Add a passkey: the platform issues a registration challenge, the
	// authenticator attests, and the session key signs the retry once the
	// payload is checked to add exactly this passkey.
	pk, err := client.NewSoftwarePasskey(sandbox.DefaultRPID, "http://localhost")
	if err != nil {
		return err
	}
	var rc struct{ Challenge string }
	if _, err := c.Do(ctx, "POST", "/sandbox/passkeys/registration-challenge", map[string]string{"accountId": wallet}, nil, &rc); err != nil {
		return err
	}
	att, err := pk.Attest(rc.Challenge)
	if err != nil {
		return err
	}
	addPasskey := walletauth.AddCredentialRequest{Type: storage.Passkey, AccountID: wallet, Nickname: "Ada's laptop",
		Challenge: rc.Challenge, Attestation: att}
	want, err := client.PasskeyAddParams(att, addPasskey.Nickname, rc.Challenge)
	if err != nil {
		return err
	}
	passkeyCred, err := c.AddCredential(ctx, addPasskey, want, sessionKey)
	if err != nil {
		return fmt.Errorf("add passkey: %w", err)
	}
	step("passkey %q added (%s) through a signed retry", passkeyCred.Nickname, passkeyCred.ID)

	// ... and log in with it: the challenge binds a fresh client key, the
	// assertion is verified with WebAuthn, the session key comes back sealed.
	device, err := authclient.NewClientKey()
	if err != nil {
		return err
	}
	var pch walletauth.ChallengeResponse
	if _, err := c.Do(ctx, "POST", "/auth/credentials/"+passkeyCred.ID+"/challenge",
		map[string]string{"clientPublicKey": device.PublicKeyHex()}, nil, &pch); err != nil {
		return err
	}
	as, err := pk.Assert(pch.Challenge)
	if err != nil {
		return err
	}
	var psess walletauth.AuthSession
	if _, err := c.Do(ctx, "POST", "/auth/credentials/"+passkeyCred.ID+"/verify", map[string]any{"type": "PASSKEY", "assertion": as},
		map[string]string{"Request-Id": pch.RequestID}, &psess); err != nil {
		return fmt.Errorf("passkey login: %w", err)
	}
	if _, err := device.OpenSessionKey(psess.EncryptedSessionSigningKey); err != nil {
		return err
	}
	step("passkey login: session %s, session key decrypted from encryptedSessionSigningKey", psess.ID)

	// 4. Add an OAuth credential from an OpenID Connect ID token. In the
	// sandbox its signature may be a dummy; every claim is still checked.
	token := sandboxIDToken(map[string]any{"iss": "https://accounts.google.com", "aud": sandbox.DefaultOIDCAudience,
		"sub": "108723981", "email": "ada.lovelace@gmail.example", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()})
	if want, err = client.OAuthAddParams(token); err != nil {
		return err
	}
	oauthCred, err := c.AddCredential(ctx, walletauth.AddCredentialRequest{Type: storage.OAuth, AccountID: wallet, OIDCToken: token},
		want, sessionKey)
	if err != nil {
		return fmt.Errorf("add OAuth: %w", err)
	}
	step("OAuth credential %s added for %s", oauthCred.ID, oauthCred.Nickname)
	login := sandboxIDToken(map[string]any{"iss": "https://accounts.google.com", "aud": sandbox.DefaultOIDCAudience,
		"sub": "108723981", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(), "nonce": oidc.NonceFor(device.PublicKeyHex())})
	var osess walletauth.AuthSession
	if _, err := c.Do(ctx, "POST", "/auth/credentials/"+oauthCred.ID+"/verify", map[string]any{"type": "OAUTH", "oidcToken": login,
		"clientPublicKey": device.PublicKeyHex()}, nil, &osess); err != nil {
		return fmt.Errorf("OAuth login: %w", err)
	}
	step("OAuth login with a nonce bound to the client key: session %s", osess.ID)

	// 5. Revoke the OAuth credential: a session of another credential signs.
	if _, err := c.RevokeCredential(ctx, wallet, oauthCred.ID, sessionKey); err != nil {
		return fmt.Errorf("revoke: %w", err)
	}
	if _, err := c.Do(ctx, "GET", "/auth/credentials?accountId="+wallet, nil, nil, &creds); err != nil {
		return err
	}
	step("OAuth credential revoked (and its sessions with it); %d credentials left", len(creds.Data))

	// 6. A signed wallet export, sealed to the client's key: the payload
	// must bind that key, the bundle must be signed by the pinned key.
	exportKey, err := authclient.NewClientKey()
	if err != nil {
		return err
	}
	words, err := c.ExportWallet(ctx, wallet, sessionKey, exportKey)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	step("wallet exported through a signed retry; the bundle is signed by the service key and the mnemonic decrypts to %d words", len(strings.Fields(string(words))))

	// 7. Ownership of an Ethereum wallet (EIP-191) and a Solana wallet
	// (Ed25519).
	evmKey, err := crypto.GenerateKey()
	if err != nil {
		return err
	}
	// The payout gate a host calls before paying an external account: 5,000
	// USDC (in minor units) is above the sandbox's verification threshold.
	gate := func(accountID string) error {
		_, err := sim.Ownership().CheckPayout(ctx, ownership.Payout{AccountID: accountID, Amount: 5_000_000_000, Currency: "USDC"})
		return err
	}
	eth, err := proveOwnership(ctx, c, cust.ID, "ETHEREUM_WALLET", crypto.PubkeyToAddress(evmKey.PublicKey).Hex(), func(msg string) string {
		sig, _ := crypto.Sign(accounts.TextHash([]byte(msg)), evmKey)
		sig[64] += 27
		return "0x" + hex.EncodeToString(sig)
	}, func(accountID string) error {
		err := gate(accountID)
		if apierror.CodeOf(err) != apierror.ExternalAccountVerificationRequired {
			return fmt.Errorf("payout gate before the proof: %v, want EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED", err)
		}
		step("payout gate refuses 5000 USDC to the unproven wallet: %s (%s)", apierror.CodeOf(err), apierror.As(err).Reason())
		return nil
	})
	if err != nil {
		return fmt.Errorf("ethereum ownership: %w", err)
	}
	step("Ethereum wallet %s proven with personal_sign: status %s", eth.ID, eth.Status)
	if err := gate(eth.ID); err != nil {
		return fmt.Errorf("payout gate after the proof: %w", err)
	}
	step("payout gate allows 5000 USDC to the proven wallet")
	solPub, solKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	sol, err := proveOwnership(ctx, c, cust.ID, "SOLANA_WALLET", base58.Encode(solPub), func(msg string) string {
		return base58.Encode(ed25519.Sign(solKey, []byte(msg)))
	}, nil)
	if err != nil {
		return fmt.Errorf("solana ownership: %w", err)
	}
	step("Solana wallet %s proven with signMessage: status %s", sol.ID, sol.Status)

	fmt.Printf("\nall flows done in %s\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// proveOwnership registers a self-custody wallet, runs registered (when not
// nil) on the new account, asks for a challenge, signs the message with sign
// and verifies it.
func proveOwnership(ctx context.Context, c *client.Client, customerID, accountType, address string, sign func(string) string,
	registered func(accountID string) error) (*sandbox.ExternalAccount, error) {
	var acct sandbox.ExternalAccount
	if _, err := c.Do(ctx, "POST", "/customers/external-accounts", map[string]any{"customerId": customerID, "currency": "USDC",
		"ownershipType": "FIRST_PARTY", "accountInfo": map[string]any{"accountType": accountType, "address": address}}, nil, &acct); err != nil {
		return nil, err
	}
	if registered != nil {
		if err := registered(acct.ID); err != nil {
			return nil, err
		}
	}
	var ch ownership.Challenge
	path := "/customers/external-accounts/" + acct.ID
	if _, err := c.Do(ctx, "POST", path+"/challenge", map[string]string{"method": "WALLET_SIGNATURE"}, nil, &ch); err != nil {
		return nil, err
	}
	if _, err := c.Do(ctx, "POST", path+"/verify", map[string]string{"signature": sign(ch.MessageToSign)}, nil, &acct); err != nil {
		return nil, err
	}
	return &acct, nil
}

// sandboxIDToken builds a JWT-shaped ID token with a dummy signature, as the
// sandbox accepts.
func sandboxIDToken(claims map[string]any) string {
	enc := func(v any) string { return base64.RawURLEncoding.EncodeToString(must(json.Marshal(v))) }
	return enc(map[string]string{"alg": "RS256", "kid": "sandbox", "typ": "JWT"}) + "." + enc(claims) + ".ZHVtbXk"
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
