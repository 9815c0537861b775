package ownership

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
)

// recoveryCase is one input of the recovery comparison: a signature that
// passed decodeRSV and a 32-byte digest.
type recoveryCase struct {
	name   string
	digest []byte
	sig    rsv
}

// detBytes returns 32 deterministic pseudo-random bytes for label and i.
func detBytes(label string, i int) []byte {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(i))
	sum := sha256.Sum256(append([]byte(label), n[:]...))
	return sum[:]
}

// recoveryCases returns valid signatures under both recovery ids, random
// low-s (r, s) pairs (about half of which name no curve point), the
// largest r and s decodeRSV accepts, and signatures built so that the
// recovered point is the point at infinity.
func recoveryCases(t *testing.T) []recoveryCase {
	t.Helper()
	var cases []recoveryCase
	add := func(name string, digest []byte, r, s *btcec.ModNScalar, v byte) {
		var sig rsv
		r.PutBytesUnchecked(sig[:32])
		s.PutBytesUnchecked(sig[32:64])
		sig[64] = v
		// Every case is one decodeRSV accepts, so the comparison covers
		// what recovery actually sees.
		if _, err := decodeRSV(bytesToHex(sig[:])); err != nil {
			t.Fatalf("%s: decodeRSV refuses the case: %v", name, err)
		}
		cases = append(cases, recoveryCase{name: name, digest: digest, sig: sig})
	}
	for i := range 64 {
		digest := detBytes("digest", i)
		_, raw := evmSign(t, string(detBytes("key", i)), digest)
		var sig rsv
		copy(sig[:], raw)
		sig[64] -= 27
		cases = append(cases, recoveryCase{name: "signed", digest: digest, sig: sig})
	}
	for i := range 256 {
		var r, s btcec.ModNScalar
		r.SetByteSlice(detBytes("r", i))
		s.SetByteSlice(detBytes("s", i))
		if s.IsOverHalfOrder() {
			s.Negate()
		}
		if r.IsZero() || s.IsZero() {
			continue
		}
		add("random", detBytes("e", i), &r, &s, byte(i&1))
	}
	// The largest r (n-1) and s (n/2, rounded down) decodeRSV accepts.
	var rMax, sMax, one btcec.ModNScalar
	rMax.SetInt(1)
	rMax.Negate()
	sMax.SetByteSlice([]byte{
		0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0x5d, 0x57, 0x6e, 0x73, 0x57, 0xa4, 0x50, 0x1d, 0xdf, 0xe9, 0x2f, 0x46, 0x68, 0x1b, 0x20, 0xa0,
	})
	one.SetInt(1)
	for v := range byte(2) {
		add("r=n-1", detBytes("edge", 0), &rMax, &one, v)
		add("s=n/2", detBytes("edge", 1), &one, &sMax, v)
		add("r=s=1", make([]byte, 32), &one, &one, v)
		all := bytes.Repeat([]byte{0xff}, 32) // a digest not below n
		add("digest>n", all, &one, &sMax, v)
	}
	// Q = r⁻¹(sR - eG) is the point at infinity when e = s·k for R = kG:
	// no key recovers, and both recoveries must say so.
	for i := range 16 {
		var k, s, e btcec.ModNScalar
		k.SetByteSlice(detBytes("k", i))
		s.SetByteSlice(detBytes("s∞", i))
		if s.IsOverHalfOrder() {
			s.Negate()
		}
		var R btcec.JacobianPoint
		btcec.ScalarBaseMultNonConst(&k, &R)
		R.ToAffine()
		var r btcec.ModNScalar
		if overflow := r.SetByteSlice(R.X.Bytes()[:]); overflow {
			continue // R.x ≥ n: recovery id 2 or 3, which decodeRSV refuses
		}
		e.Mul2(&s, &k)
		digest := e.Bytes()
		v := byte(0)
		if R.Y.IsOdd() {
			v = 1
		}
		add("infinity", digest[:], &r, &s, v)
	}
	return cases
}

func bytesToHex(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&0x0f]
	}
	return string(out)
}

// TestRecoveryMatchesPureGo holds the recovery of this build (libsecp256k1
// with cgo) to the pure-Go one on every case: the same key, or no key from
// both. Without cgo the two are one function and the test is trivial.
func TestRecoveryMatchesPureGo(t *testing.T) {
	counts := map[string][2]int{}
	for _, c := range recoveryCases(t) {
		got, gotOK := recoverAddress(c.digest, &c.sig)
		want, wantOK := recoverAddressPureGo(c.digest, &c.sig)
		if gotOK != wantOK || got != want {
			t.Fatalf("%s r‖s‖v=%x digest=%x: recoverAddress = %x, %v; pure Go = %x, %v",
				c.name, c.sig, c.digest, got, gotOK, want, wantOK)
		}
		n := counts[c.name]
		if gotOK {
			n[0]++
		} else {
			n[1]++
		}
		counts[c.name] = n
	}
	// The cases must exercise both outcomes where they are meant to.
	if n := counts["signed"]; n[1] != 0 || n[0] == 0 {
		t.Errorf("signed cases recovered/failed = %v, want all recovered", n)
	}
	if n := counts["random"]; n[0] == 0 || n[1] == 0 {
		t.Errorf("random cases recovered/failed = %v, want both outcomes", n)
	}
	if n := counts["infinity"]; n[0] != 0 || n[1] == 0 {
		t.Errorf("point-at-infinity cases recovered/failed = %v, want all failed", n)
	}
}

// TestRecoverPrefixedNoKey checks that a well-formed signature whose r
// names no curve point is a mismatch, on both builds.
func TestRecoverPrefixedNoKey(t *testing.T) {
	for i := range 256 {
		var r, s btcec.ModNScalar
		r.SetByteSlice(detBytes("r", i))
		s.SetInt(1)
		var sig rsv
		r.PutBytesUnchecked(sig[:32])
		s.PutBytesUnchecked(sig[32:64])
		digest := detBytes("e", i)
		if _, ok := recoverAddressPureGo(digest, &sig); ok {
			continue
		}
		_, err := recoverPrefixed(digest, "0x"+bytesToHex(sig[:]))
		wantReject(t, err, "no public key recovers from the signature")
		return
	}
	t.Fatal("no r without a curve point among the cases")
}
