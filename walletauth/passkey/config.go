package passkey

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
)

// DefaultRegistrationTTL is how long a registration challenge stays usable
// unless [Config].RegistrationTTL says otherwise.
const DefaultRegistrationTTL = 5 * time.Minute

// DefaultMaxRegistrationChallenges is how many registration challenges an
// account keeps unless [Config].MaxRegistrationChallenges says otherwise.
const DefaultMaxRegistrationChallenges = 16

// RelyingParty is the WebAuthn relying-party configuration: which RP id
// passkeys are scoped to and which clients may use them.
type RelyingParty struct {
	// ID is the RP id: a domain (no scheme, port or path; not an IP
	// address), for example "example.com" or "localhost". Authenticator data
	// must carry its SHA-256.
	ID string
	// Name is the display name shown by authenticators at registration.
	Name string
	// Origins are the web origins allowed in clientDataJSON, each
	// "https://host[:port]" (plain http only for localhost). Origins whose
	// host is not the RP id or below it need the related-origins file
	// (/.well-known/webauthn) served at the RP id.
	Origins []string
	// AndroidApps are the Android apps allowed to use the passkeys. Their
	// origins ("android:apk-key-hash:<base64url SHA-256 of the signing
	// certificate>") are derived from the fingerprints.
	AndroidApps []AndroidApp
	// AppleAppIDs are the iOS apps allowed to use the passkeys, each
	// "TEAMID.bundle.id". Native iOS requests carry the origin
	// "https://<ID>", which is allowed when this list is not empty.
	AppleAppIDs []string
	// RequireUserVerification rejects registrations and assertions whose
	// authenticator data lacks the UV flag. User presence is always required.
	RequireUserVerification bool
	// AllowCounterRegression accepts an assertion whose sign counter did not
	// increase; the returned record then carries CloneWarning. By default such
	// an assertion is rejected.
	AllowCounterRegression bool
}

// AndroidApp is an Android app allowed to use the RP's passkeys.
type AndroidApp struct {
	// Package is the application id, for example "com.example.wallet".
	Package string
	// CertFingerprints are the SHA-256 fingerprints of the app's signing
	// certificates (debug, upload and Play app-signing), as 64 hex digits,
	// with or without colons, in either case.
	CertFingerprints []string
}

// Config configures a [Verifier]. Its zero values are the defaults, except
// RelyingParty, which is required.
type Config struct {
	// RelyingParty is the relying party whose ceremonies the verifier
	// runs. Required; New validates it.
	RelyingParty RelyingParty
	// Rand is the source of challenge bytes and ids; nil means crypto/rand.
	Rand io.Reader
	// RegistrationTTL is the lifetime of registration challenges; zero or
	// negative means DefaultRegistrationTTL.
	RegistrationTTL time.Duration
	// MaxRegistrationChallenges bounds the registration challenges an
	// account keeps: issuing one more supersedes the oldest, which then
	// answers as unknown. Zero or negative means
	// DefaultMaxRegistrationChallenges.
	MaxRegistrationChallenges int
	// Sandbox switches sandbox mode on: an assertion whose signature is
	// exactly [SandboxSignature] skips the WebAuthn checks. Never set it in
	// production.
	Sandbox bool
}

// Verifier runs the WebAuthn ceremonies of one relying party. It holds no
// mutable state and is safe for concurrent use. It reads no clock of its
// own: the ceremonies take the current time from their caller, and
// [Verifier.ConsumeRegistration], which decides expiry on a time read
// after a lock, takes the caller's clock.
type Verifier struct {
	cfg      Config   // normalized by New; RelyingParty deep-copied
	origins  []string // web origins, normalised
	opaque   []string // android:apk-key-hash:... origins
	android  []androidTarget
	related  []byte // /.well-known/webauthn body, nil without web origins
	rpIDHash [32]byte
}

type androidTarget struct {
	pkg          string
	fingerprints []string // uppercase, colon separated
}

var (
	appleAppID     = regexp.MustCompile(`^[A-Z0-9]{10}\.[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$`)
	androidPackage = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$`)
)

// New validates cfg.RelyingParty and returns its verifier. It rejects an
// invalid RP id, an
// origin that is not a bare http(s) origin (http only for localhost), an
// Android package or fingerprint that is malformed, an Apple app id not of
// the form "TEAMID.bundle.id", a configuration that allows no client at all,
// and web origins spanning more registrable domains than clients accept in a
// related-origins file.
func New(cfg Config) (*Verifier, error) {
	rp := cfg.RelyingParty
	if err := protocol.ValidateRPID(rp.ID); err != nil {
		return nil, fmt.Errorf("passkey: RelyingParty.ID %q: %w", rp.ID, err)
	}
	if strings.ToLower(rp.ID) != rp.ID {
		return nil, fmt.Errorf("passkey: RelyingParty.ID %q must be lowercase", rp.ID)
	}
	if strings.TrimSpace(rp.Name) == "" {
		return nil, errors.New("passkey: RelyingParty.Name is required")
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.MaxRegistrationChallenges <= 0 {
		cfg.MaxRegistrationChallenges = DefaultMaxRegistrationChallenges
	}
	if cfg.RegistrationTTL <= 0 {
		cfg.RegistrationTTL = DefaultRegistrationTTL
	}
	v := &Verifier{cfg: cfg}
	v.cfg.RelyingParty.Origins = slices.Clone(rp.Origins)
	v.cfg.RelyingParty.AppleAppIDs = slices.Clone(rp.AppleAppIDs)
	v.cfg.RelyingParty.AndroidApps = nil
	for _, o := range rp.Origins {
		n, err := normaliseOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("passkey: RelyingParty.Origins: %w", err)
		}
		if !slices.Contains(v.origins, n) {
			v.origins = append(v.origins, n)
		}
	}
	for _, id := range rp.AppleAppIDs {
		if !appleAppID.MatchString(id) {
			return nil, fmt.Errorf("passkey: RelyingParty.AppleAppIDs: %q is not TEAMID.bundle.id (ten uppercase letters or digits, a dot, the bundle id)", id)
		}
	}
	if len(rp.AppleAppIDs) > 0 {
		if ios := "https://" + rp.ID; !slices.Contains(v.origins, ios) {
			v.origins = append(v.origins, ios)
		}
	}
	for _, app := range rp.AndroidApps {
		t, err := androidApp(app)
		if err != nil {
			return nil, err
		}
		v.android = append(v.android, t)
		v.cfg.RelyingParty.AndroidApps = append(v.cfg.RelyingParty.AndroidApps, AndroidApp{Package: app.Package, CertFingerprints: slices.Clone(app.CertFingerprints)})
		for _, fp := range t.fingerprints {
			raw, _ := hex.DecodeString(strings.ReplaceAll(fp, ":", ""))
			o := protocol.OpaqueOriginPrefixAndroidAPKKeyHash + base64.RawURLEncoding.EncodeToString(raw)
			if !slices.Contains(v.opaque, o) {
				v.opaque = append(v.opaque, o)
			}
		}
	}
	if len(v.origins) == 0 && len(v.opaque) == 0 {
		return nil, errors.New("passkey: RelyingParty allows no client: set Origins, AndroidApps or AppleAppIDs")
	}
	if len(v.origins) > 0 {
		related, err := protocol.NewRelatedOrigins(v.origins...)
		if err != nil {
			return nil, fmt.Errorf("passkey: RelyingParty.Origins: %w", err)
		}
		if v.related, err = related.Bytes(); err != nil {
			return nil, fmt.Errorf("passkey: related origins: %w", err)
		}
	}
	v.rpIDHash = sha256Sum([]byte(rp.ID))
	return v, nil
}

// RelyingParty returns a copy of the configuration the verifier was made
// from.
func (v *Verifier) RelyingParty() RelyingParty {
	rp := v.cfg.RelyingParty
	rp.Origins = slices.Clone(rp.Origins)
	rp.AppleAppIDs = slices.Clone(rp.AppleAppIDs)
	rp.AndroidApps = make([]AndroidApp, len(v.cfg.RelyingParty.AndroidApps))
	for i, a := range v.cfg.RelyingParty.AndroidApps {
		rp.AndroidApps[i] = AndroidApp{Package: a.Package, CertFingerprints: slices.Clone(a.CertFingerprints)}
	}
	return rp
}

// AllowedOrigins returns every origin clientDataJSON may carry: the web
// origins (normalised, including "https://<ID>" when Apple apps are set) and
// the Android app origins derived from the certificate fingerprints.
func (v *Verifier) AllowedOrigins() []string {
	return slices.Concat(v.origins, v.opaque)
}

// normaliseOrigin checks that o is a bare origin and returns its normal form
// (lowercase scheme and host, no default port).
func normaliseOrigin(o string) (string, error) {
	u, err := url.Parse(o)
	if err != nil {
		return "", fmt.Errorf("%q: %w", o, err)
	}
	if u.Opaque != "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Host == "" {
		return "", fmt.Errorf("%q is not a bare origin scheme://host[:port]", o)
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname())
	switch scheme {
	case "https":
	case "http":
		if host != "localhost" {
			return "", fmt.Errorf("%q: plain http is allowed only for localhost", o)
		}
	default:
		return "", fmt.Errorf("%q: scheme must be https (or http for localhost)", o)
	}
	port := u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, nil
}

func androidApp(app AndroidApp) (androidTarget, error) {
	if !androidPackage.MatchString(app.Package) {
		return androidTarget{}, fmt.Errorf("passkey: RelyingParty.AndroidApps: package %q is not an Android application id", app.Package)
	}
	if len(app.CertFingerprints) == 0 {
		return androidTarget{}, fmt.Errorf("passkey: RelyingParty.AndroidApps: package %q has no certificate fingerprint", app.Package)
	}
	t := androidTarget{pkg: app.Package}
	for _, fp := range app.CertFingerprints {
		raw, err := hex.DecodeString(strings.ReplaceAll(fp, ":", ""))
		if err != nil || len(raw) != 32 {
			return androidTarget{}, fmt.Errorf("passkey: RelyingParty.AndroidApps: fingerprint %q of %q is not a SHA-256 digest in hex", fp, app.Package)
		}
		if parts := strings.Split(fp, ":"); len(parts) > 1 && (len(parts) != 32 || slices.ContainsFunc(parts, func(p string) bool { return len(p) != 2 })) {
			return androidTarget{}, fmt.Errorf("passkey: RelyingParty.AndroidApps: fingerprint %q of %q has misplaced colons", fp, app.Package)
		}
		var b strings.Builder
		for i, c := range raw {
			if i > 0 {
				b.WriteByte(':')
			}
			fmt.Fprintf(&b, "%02X", c)
		}
		if s := b.String(); !slices.Contains(t.fingerprints, s) {
			t.fingerprints = append(t.fingerprints, s)
		}
	}
	return t, nil
}
