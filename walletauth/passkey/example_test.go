package passkey_test

import (
	"fmt"
	"net/http/httptest"

	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

// The association files a platform publishes under /.well-known/ come from
// the same relying-party configuration the verifier checks origins against.
func Example_wellKnownFiles() {
	v, err := passkey.New(passkey.Config{RelyingParty: passkey.RelyingParty{
		ID:      "example.com",
		Name:    "Example Wallet",
		Origins: []string{"https://example.com", "https://pay.example.net"},
		AndroidApps: []passkey.AndroidApp{{
			Package:          "com.example.wallet",
			CertFingerprints: []string{"1F:C6:9A:3B:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:01:23:45:67:89:AB:CD:EF:10:32:2D:D7"},
		}},
		AppleAppIDs: []string{"ABCDE12345.com.example.wallet"},
	}})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(v.AppleAppSiteAssociation()))
	fmt.Println(string(v.AssetLinks()))
	fmt.Println(string(v.RelatedOrigins()))
	fmt.Println(v.AllowedOrigins()[2])

	rec := httptest.NewRecorder()
	v.Handler().ServeHTTP(rec, httptest.NewRequest("GET", passkey.PathAssetLinks, nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	// Output:
	// {"webcredentials":{"apps":["ABCDE12345.com.example.wallet"]}}
	// [{"relation":["delegate_permission/common.handle_all_urls","delegate_permission/common.get_login_creds"],"target":{"namespace":"android_app","package_name":"com.example.wallet","sha256_cert_fingerprints":["1F:C6:9A:3B:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:01:23:45:67:89:AB:CD:EF:10:32:2D:D7"]}}]
	// {"origins":["https://example.com","https://pay.example.net"]}
	// android:apk-key-hash:H8aaOwARIjNEVWZ3iJmqu8zd7v8BI0VniavN7xAyLdc
	// 200 application/json
}

// The WebAuthn challenge of a passkey authentication binds the session key
// the client will use, the credential and the pending request.
func ExampleVerifier_AssertionChallenge() {
	v, err := passkey.New(passkey.Config{RelyingParty: passkey.RelyingParty{ID: "example.com", Name: "Example Wallet", Origins: []string{"https://example.com"}}})
	if err != nil {
		panic(err)
	}
	const key = "02c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5"
	const cred = "AuthMethod:7d0c0a53-8c3e-4a8e-9a51-5a7a2f7f0c11"
	const req = "Request:9b2f1f4e-2a7c-4c55-b1a6-0f5f6c1b3e21"
	fmt.Println(string(v.AssertionPayload(key, cred, req)))
	ch := v.AssertionChallenge(key, cred, req)
	fmt.Println(ch)
	fmt.Println(authclient.ClientDataChallenge(ch))
	// Output:
	// {"type":"PASSKEY_SESSION","rpId":"example.com","requestId":"Request:9b2f1f4e-2a7c-4c55-b1a6-0f5f6c1b3e21","credentialId":"AuthMethod:7d0c0a53-8c3e-4a8e-9a51-5a7a2f7f0c11","clientPublicKey":"02c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5"}
	// df5ea2c84c4123d0930bb8024570fdd97941cccbd7907b516e570d71425312b1
	// ZGY1ZWEyYzg0YzQxMjNkMDkzMGJiODAyNDU3MGZkZDk3OTQxY2NjYmQ3OTA3YjUxNmU1NzBkNzE0MjUzMTJiMQ
}
