package passkey

import (
	"encoding/json"
	"slices"
)

// Paths of the association files, relative to the origin they are served at.
const (
	PathAppleAppSiteAssociation = "/.well-known/apple-app-site-association"
	PathAssetLinks              = "/.well-known/assetlinks.json"
	PathRelatedOrigins          = "/.well-known/webauthn"
)

// Digital Asset Links relations written for every Android app: passkeys and
// other sign-in credentials are shared with it, and it handles the site's
// links (some Android versions require the latter for passkey sharing).
var assetLinkRelations = []string{
	"delegate_permission/common.handle_all_urls",
	"delegate_permission/common.get_login_creds",
}

// AppleAppSiteAssociation returns the apple-app-site-association document
// that lets the configured iOS apps use the RP's passkeys:
// {"webcredentials":{"apps":[...]}}. The apps list is empty (never null)
// when no Apple app is configured. Serve it at the RP id host as
// application/json, over HTTPS, without redirects.
func (v *Verifier) AppleAppSiteAssociation() []byte {
	apps := slices.Clone(v.cfg.RelyingParty.AppleAppIDs)
	if apps == nil {
		apps = []string{}
	}
	doc := struct {
		WebCredentials struct {
			Apps []string `json:"apps"`
		} `json:"webcredentials"`
	}{}
	doc.WebCredentials.Apps = apps
	b, _ := json.Marshal(doc)
	return b
}

// AssetLinks returns the Digital Asset Links statement list
// (/.well-known/assetlinks.json) naming every configured Android app with its
// certificate fingerprints (uppercase, colon separated) and the relations
// handle_all_urls and get_login_creds. It is "[]" when no Android app is
// configured.
func (v *Verifier) AssetLinks() []byte {
	type target struct {
		Namespace    string   `json:"namespace"`
		PackageName  string   `json:"package_name"`
		Fingerprints []string `json:"sha256_cert_fingerprints"`
	}
	type statement struct {
		Relation []string `json:"relation"`
		Target   target   `json:"target"`
	}
	out := make([]statement, 0, len(v.android))
	for _, a := range v.android {
		out = append(out, statement{Relation: assetLinkRelations,
			Target: target{Namespace: "android_app", PackageName: a.pkg, Fingerprints: a.fingerprints}})
	}
	b, _ := json.Marshal(out)
	return b
}

// RelatedOrigins returns the WebAuthn related-origins document
// (/.well-known/webauthn), {"origins":[...]}, listing the configured web
// origins normalised by go-webauthn. It lets browsers accept the RP id on
// origins outside it; clients process at most five registrable domains, which
// [New] enforces. The list is empty when no web origin is configured.
func (v *Verifier) RelatedOrigins() []byte {
	if v.related == nil {
		return []byte(`{"origins":[]}`)
	}
	return slices.Clone(v.related)
}
