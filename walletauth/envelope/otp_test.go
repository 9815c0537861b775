package envelope

import (
	"crypto/ecdh"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
)

func TestOTPRoundTrip(t *testing.T) {
	target := testECDH(t, "otp/target")
	session := testKey(t, "otp/session")
	for _, pub := range []string{compressedHex(t, session), uncompressedHex(t, session), strings.ToUpper(compressedHex(t, session))} {
		bundle, err := SealOTP(target.PublicKey(), "123456", pub, nil)
		if err != nil {
			t.Fatal(err)
		}
		att, err := OpenOTP(target.Bytes(), bundle)
		if err != nil {
			t.Fatal(err)
		}
		if att.Code != "123456" || att.PublicKeyHex != pub || !att.PublicKey.Equal(&session.PublicKey) {
			t.Fatalf("opened %+v", att)
		}
	}
}

// TestOTPCompressedKey checks PublicKeyCompressedHex against
// stamper.CompressedHex of the parsed key, for keys of both parities of
// Y sent in every encoding.
func TestOTPCompressedKey(t *testing.T) {
	target := testECDH(t, "otp/target")
	parities := map[byte]bool{}
	for i := range 8 {
		session := testKey(t, "otp/compressed/"+strconv.Itoa(i))
		want := compressedHex(t, session)
		parities[want[1]] = true
		for _, pub := range []string{want, uncompressedHex(t, session), strings.ToUpper(want), strings.ToUpper(uncompressedHex(t, session))} {
			bundle, err := SealOTP(target.PublicKey(), "123456", pub, nil)
			if err != nil {
				t.Fatal(err)
			}
			att, err := OpenOTP(target.Bytes(), bundle)
			if err != nil {
				t.Fatal(err)
			}
			if att.PublicKeyCompressedHex != want {
				t.Fatalf("PublicKeyCompressedHex of %s = %s, want %s", pub, att.PublicKeyCompressedHex, want)
			}
		}
	}
	if !parities['2'] || !parities['3'] {
		t.Fatalf("keys cover the parities %v, want both", parities)
	}
}

func TestSealOTPWireBytes(t *testing.T) {
	target := testECDH(t, "otp/target")
	pub := compressedHex(t, testKey(t, "otp/session"))
	bundle, err := SealOTP(target.PublicKey(), "0<&>1", pub, seeded("otp/wire"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(bundle, `{"encappedPublic":"04`) || !strings.Contains(bundle, `","ciphertext":"`) {
		t.Fatalf("bundle shape: %s", bundle)
	}
	again, _ := SealOTP(target.PublicKey(), "0<&>1", pub, seeded("otp/wire"))
	if again != bundle {
		t.Fatal("same seed gave different bundles")
	}
	enc, ct, err := parseClientMessage(bundle)
	if err != nil {
		t.Fatal(err)
	}
	pt, err := Open(target, enc, ct)
	if err != nil {
		t.Fatal(err)
	}
	// JSON.stringify's bytes: compact, this member order, no HTML escaping.
	if want := `{"otp_code":"0<&>1","public_key":"` + pub + `"}`; string(pt) != want {
		t.Fatalf("plaintext %s, want %s", pt, want)
	}
}

func TestSealOTPForBundle(t *testing.T) {
	signer := testKey(t, "otp/signer")
	bundle, target, err := NewTargetBundle(signer, "org", "user", nil)
	if err != nil {
		t.Fatal(err)
	}
	pub := compressedHex(t, testKey(t, "otp/session"))
	sealed, err := SealOTPForBundle(bundle, &signer.PublicKey, "777777", pub, nil)
	if err != nil {
		t.Fatal(err)
	}
	att, err := OpenOTP(target.Bytes(), sealed)
	if err != nil || att.Code != "777777" {
		t.Fatalf("opened %+v, %v", att, err)
	}
	_, err = SealOTPForBundle(bundle, &testKey(t, "otp/stranger").PublicKey, "777777", pub, nil)
	wantErr(t, err, apierror.Unauthorized, "", "enclaveQuorumPublic is not the trusted signer key")
}

func TestSealOTPErrors(t *testing.T) {
	_, err := SealOTP(nil, "1", "2", nil)
	wantErr(t, err, apierror.InternalError, "", "")
	_, err = SealOTP(mustX25519(t).PublicKey(), "1", "2", nil)
	wantErr(t, err, apierror.InternalError, "", "")
	_, err = SealOTP(testECDH(t, "otp/target").PublicKey(), "1", "2", failingReader{})
	wantErr(t, err, apierror.InternalError, "", "")
}

// sealRaw seals arbitrary plaintext to target in the encryptedOtpBundle
// wrapper, for plaintext checks.
func sealRaw(t testing.TB, target *ecdh.PublicKey, pt string) string {
	t.Helper()
	enc, ct, err := Seal(target, []byte(pt), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := marshalCompact(clientMessage{hex.EncodeToString(enc), hex.EncodeToString(ct)})
	return string(b)
}

func TestOpenOTPErrors(t *testing.T) {
	target := testECDH(t, "otp/target")
	other := testECDH(t, "otp/other")
	session := testKey(t, "otp/session")
	pub := compressedHex(t, session)
	good, err := SealOTP(target.PublicKey(), "123456", pub, nil)
	if err != nil {
		t.Fatal(err)
	}
	enc, ct, _ := parseClientMessage(good)
	encHex, ctHex := hex.EncodeToString(enc), hex.EncodeToString(ct)
	msg := func(e, c string) string {
		b, _ := marshalCompact(clientMessage{e, c})
		return string(b)
	}
	flipped := append([]byte{}, ct...)
	flipped[len(flipped)-1] ^= 0x80
	otherEnc, _, _ := Seal(target.PublicKey(), nil, nil)
	notObject := "encryptedOtpBundle is not a JSON object with string members encappedPublic and ciphertext"
	payloadNotObject := "decrypted payload is not a JSON object with string members otp_code and public_key"
	sealedTo := func(pt string) string { return sealRaw(t, target.PublicKey(), pt) }
	bad, unauth := apierror.InvalidInput, apierror.Unauthorized
	cases := []struct {
		name   string
		key    *ecdh.PrivateKey
		bundle string
		code   apierror.Code
		reason string
	}{
		{"empty", target, "", bad, "encryptedOtpBundle is required"},
		{"too long", target, strings.Repeat(" ", MaxEncryptedOTPBundleLen+1), bad, "encryptedOtpBundle exceeds 4096 bytes"},
		{"not JSON", target, "hello", bad, notObject},
		{"JSON string", target, `"x"`, bad, notObject},
		{"array", target, `[1]`, bad, notObject},
		{"null", target, `null`, bad, notObject},
		{"wrong member type", target, `{"encappedPublic":1}`, bad, notObject},
		{"trailing", target, good + "x", bad, notObject},
		{"enc missing", target, msg("", ctHex), bad, "encappedPublic is required"},
		{"enc not hex", target, msg("04zz", ctHex), bad, "encappedPublic is not hex"},
		{"enc odd hex", target, msg(encHex[:129], ctHex), bad, "encappedPublic is not hex"},
		{"enc compressed", target, msg(hex.EncodeToString(compressPoint(enc)), ctHex), bad, "encappedPublic must be a 65-byte uncompressed P-256 point"},
		{"enc off curve", target, msg(encHex[:128]+flipHex(encHex[128:]), ctHex), bad, "encappedPublic is not a point on P-256"},
		{"enc off curve before a bad ciphertext", target, msg(encHex[:128]+flipHex(encHex[128:]), "zz"), bad, "encappedPublic is not a point on P-256"},
		{"enc off curve before a short ciphertext", target, msg(encHex[:128]+flipHex(encHex[128:]), "00"), bad, "encappedPublic is not a point on P-256"},
		{"enc prefix 02", target, msg("02"+encHex[2:], ctHex), bad, "encappedPublic is not a point on P-256"},
		{"enc infinity", target, msg("00", ctHex), bad, "encappedPublic must be a 65-byte uncompressed P-256 point"},
		{"ciphertext missing", target, msg(encHex, ""), bad, "ciphertext is required"},
		{"ciphertext not hex", target, msg(encHex, "nothex!"), bad, "ciphertext is not hex"},
		{"ciphertext short", target, msg(encHex, ctHex[:30]), bad, "ciphertext is shorter than the 16-byte AES-GCM tag"},
		{"sealed to another target", other, good, unauth, reasonOTPNotSealedToTarget},
		{"ciphertext altered", target, msg(encHex, hex.EncodeToString(flipped)), unauth, reasonOTPNotSealedToTarget},
		{"enc swapped", target, msg(hex.EncodeToString(otherEnc), ctHex), unauth, reasonOTPNotSealedToTarget},
		{"payload not JSON", target, sealedTo("123456"), bad, payloadNotObject},
		{"payload empty", target, sealedTo(""), bad, payloadNotObject},
		{"payload array", target, sealedTo(`["123456"]`), bad, payloadNotObject},
		{"payload number code", target, sealedTo(`{"otp_code":123456,"public_key":"` + pub + `"}`), bad, payloadNotObject},
		{"code missing", target, sealedTo(`{"public_key":"` + pub + `"}`), bad, "otp_code is required"},
		{"code empty", target, sealedTo(`{"otp_code":"","public_key":"` + pub + `"}`), bad, "otp_code is required"},
		{"code too long", target, sealedTo(`{"otp_code":"` + strings.Repeat("1", MaxOTPCodeLen+1) + `","public_key":"` + pub + `"}`), bad, "otp_code exceeds 64 bytes"},
		{"key missing", target, sealedTo(`{"otp_code":"1"}`), bad, "public_key is required"},
		{"key not hex", target, sealedTo(`{"otp_code":"1","public_key":"` + strings.Repeat("g", 66) + `"}`), bad, "public_key is not hex"},
		{"key wrong length", target, sealedTo(`{"otp_code":"1","public_key":"` + pub[:64] + `"}`), bad, "public_key must be 66 (compressed) or 130 (uncompressed) hex characters"},
		{"key not on curve", target, sealedTo(`{"otp_code":"1","public_key":"02` + noPointX(t) + `"}`), bad, "public_key is not a point on P-256"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := OpenOTP(c.key.Bytes(), c.bundle)
			field := ""
			if c.code == bad {
				field = "encryptedOtpBundle"
			}
			wantErr(t, err, c.code, field, c.reason)
		})
	}
	_, err = OpenOTP(nil, good)
	wantErr(t, err, apierror.InternalError, "", "")
	_, err = OpenOTP(make([]byte, 31), good)
	wantErr(t, err, apierror.InternalError, "", "")
}

// TestOpenOTPMembers: clients may add members, which are ignored; a member
// named twice, or in two cases, has no single reading and is refused.
func TestOpenOTPMembers(t *testing.T) {
	target := testECDH(t, "otp/target")
	pub := compressedHex(t, testKey(t, "otp/session"))
	bundle := sealRaw(t, target.PublicKey(), `{"otp_code":"2","public_key":"`+pub+`","extra":[1]}`)
	bundle = strings.Replace(bundle, `{`, `{"version":"x",`, 1)
	att, err := OpenOTP(target.Bytes(), bundle)
	if err != nil || att.Code != "2" {
		t.Fatalf("opened %+v, %v", att, err)
	}
	for _, pt := range []string{
		`{"otp_code":"1","otp_code":"2","public_key":"` + pub + `"}`,
		`{"otp_code":"1","OTP_code":"2","public_key":"` + pub + `"}`,
		`{"Otp_code":"1","public_key":"` + pub + `"}`,
	} {
		_, err := OpenOTP(target.Bytes(), sealRaw(t, target.PublicKey(), pt))
		wantErr(t, err, apierror.InvalidInput, fieldEncryptedOTPBundle, "")
	}
	outer := sealRaw(t, target.PublicKey(), `{"otp_code":"2","public_key":"`+pub+`"}`)
	outer = strings.Replace(outer, `{`, `{"Ciphertext":"00",`, 1)
	_, err = OpenOTP(target.Bytes(), outer)
	wantErr(t, err, apierror.InvalidInput, fieldEncryptedOTPBundle, "")
}
