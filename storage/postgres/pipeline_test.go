package postgres

import (
	"slices"
	"testing"

	"github.com/walletgate/walletgate/storage"
)

// Declarations for the pipeline's tests: no SQL is needed, the pipeline
// decides from kinds and tables alone.
func decl(kind stmtKind, ts ...table) stmt {
	return stmt{sql: kind.String() + tablesOf(ts...).String(), kind: kind, tables: tablesOf(ts...)}
}

func batchOf(sts ...stmt) *batch {
	b := &batch{}
	for _, st := range sts {
		b.Queue(st)
	}
	return b
}

// heldPipeline holds one row of each kept table: account w, credential c,
// session s.
func heldPipeline() *pipeline {
	p := &pipeline{}
	p.hold(heldWallets, "w", storage.InternalAccount{ID: "w"})
	p.hold(heldCredentials, "c", storage.Credential{ID: "c"})
	p.hold(heldSessions, "s", storage.Session{ID: "s"})
	return p
}

// kept reports which of the rows of heldPipeline p still holds.
func kept(p *pipeline) (wallet, credential, session bool) {
	_, wallet = p.wallet("w")
	_, credential = p.credential("c")
	_, session = p.session("s")
	return
}

func TestPipelineInvalidation(t *testing.T) {
	type want struct{ wallet, credential, session bool }
	all := want{true, true, true}
	for _, tc := range []struct {
		name     string
		deferred bool // deferred rather than sent
		b        *batch
		want     want
	}{
		{"write of another table keeps", false, batchOf(decl(kindWrite, tableOutboxEvents)), all},
		{"write of the table forgets", false, batchOf(decl(kindWrite, tableCredentials)), want{true, false, true}},
		{"lock of the table forgets", false, batchOf(decl(kindLock, tableInternalAccounts)), want{false, true, true}},
		{"lock forgets every table it declares", false, batchOf(decl(kindLock, tableCredentials, tableSessions)), want{true, false, false}},
		{"lock of no table keeps", false, batchOf(decl(kindLock)), all},
		{"read of the table keeps", false, batchOf(decl(kindRead, tableCredentials)), all},
		{"read of two tables keeps", false, batchOf(decl(kindRead, tableInternalAccounts, tableCredentials)), all},
		{"read beside a write keeps the read's tables", false,
			batchOf(decl(kindLock, tableCredentials), decl(kindRead, tableInternalAccounts, tableCredentials)), want{true, false, true}},
		{"deferred write forgets immediately", true, batchOf(decl(kindWrite, tableSessions)), want{true, true, false}},
		{"deferred write of another table keeps", true, batchOf(decl(kindWrite, tableRateLimitWindows)), all},
		{"deferred lock and write forget both", true,
			batchOf(decl(kindLock), decl(kindWrite, tableInternalAccounts, tableCredentials)), want{false, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := heldPipeline()
			if tc.deferred {
				p.deferWrites(tc.b)
			} else {
				p.next(tc.b)
			}
			var got want
			got.wallet, got.credential, got.session = kept(p)
			if got != tc.want {
				t.Fatalf("kept (wallet, credential, session) = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestPipelineReadAhead(t *testing.T) {
	ahead := func() *pipeline {
		p := &pipeline{}
		p.readAhead(aheadRows{wallet: &storage.InternalAccount{ID: "w"}})
		return p
	}
	for _, tc := range []struct {
		name string
		op   func(*pipeline)
		want bool
	}{
		{"kept until the next statement", func(*pipeline) {}, true},
		{"dropped when a read is sent", func(p *pipeline) { p.next(batchOf(decl(kindRead, tableOutboxEvents))) }, false},
		{"dropped when a write is sent", func(p *pipeline) { p.next(batchOf(decl(kindWrite, tableSessions))) }, false},
		{"dropped when deferred writes are taken for the COMMIT", func(p *pipeline) {
			p.deferWrites(batchOf(decl(kindWrite, tableOutboxEvents)))
			p.next(&batch{})
		}, false},
		{"kept by a deferred write of another table", func(p *pipeline) {
			p.deferWrites(batchOf(decl(kindWrite, tableOutboxEvents)))
		}, true},
		{"dropped by a deferred write of its table", func(p *pipeline) {
			p.deferWrites(batchOf(decl(kindWrite, tableInternalAccounts)))
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ahead()
			tc.op(p)
			if _, ok := p.aheadWallet("w"); ok != tc.want {
				t.Fatalf("read-ahead account kept = %v, want %v", ok, tc.want)
			}
		})
	}
	if _, ok := ahead().aheadWallet("other"); ok {
		t.Fatal("the read-ahead account answered for another id")
	}
	if _, ok := (&pipeline{}).aheadWallet("w"); ok {
		t.Fatal("an empty pipeline answered a read-ahead account")
	}
}

func TestPipelineQueueOrder(t *testing.T) {
	p := &pipeline{}
	a := batchOf(decl(kindWrite, tableOTPIssuances))
	b := batchOf(decl(kindLock), decl(kindWrite, tablePendingRequests))
	c := batchOf(decl(kindRead, tableCredentials))
	p.deferWrites(a)
	p.deferWrites(b)
	if !p.deferred() {
		t.Fatal("nothing deferred after two deferred writes")
	}
	wantQ := slices.Concat(a.pg.QueuedQueries, b.pg.QueuedQueries, c.pg.QueuedQueries)
	out, read := p.next(c)
	if !slices.Equal(out.pg.QueuedQueries, wantQ) {
		t.Fatalf("sent %d statements, want the deferred writes in order, then the batch", out.Len())
	}
	if want := tablesOf(tableOTPIssuances, tablePendingRequests); out.changes() != want {
		t.Fatalf("the sent batch changes %v, want the tables of the deferred writes %v", out.changes(), want)
	}
	if read {
		t.Fatal("a batch carrying deferred writes reported as plain reads")
	}
	if p.deferred() {
		t.Fatal("deferred writes still queued after they were taken")
	}
	d := batchOf(decl(kindRead, tableSessions))
	if out, read := p.next(d); out != d || !read {
		t.Fatalf("next of a read with nothing deferred = (%d statements, read %v), want the batch itself, read", out.Len(), read)
	}
	if out, read := p.next(batchOf(decl(kindRead), decl(kindLock))); out.Len() != 2 || read {
		t.Fatalf("next of a read and a lock = (%d statements, read %v), want both, not read", out.Len(), read)
	}
	if (&batch{}).reads() {
		t.Fatal("an empty batch reported as plain reads: it must begin the transaction")
	}
}

func TestPipelineHeldRowsAreCopies(t *testing.T) {
	p := &pipeline{}
	p.hold(heldCredentials, "c", storage.Credential{ID: "c",
		OAuth:    &storage.OAuthIdentity{Subject: "sub"},
		WebAuthn: &storage.WebAuthnCredential{CredentialID: []byte{1}, PublicKey: []byte{2}, AAGUID: []byte{3}, Transports: []string{"usb"}}})
	p.hold(heldSessions, "s", storage.Session{ID: "s", PublicKey: []byte{4}})
	acct := storage.InternalAccount{ID: "w", Email: "a@example.com"}
	p.readAhead(aheadRows{wallet: &acct})
	acct.Email = "changed by the reader"

	c, _ := p.credential("c")
	c.OAuth.Subject = "x"
	c.WebAuthn.CredentialID[0], c.WebAuthn.PublicKey[0], c.WebAuthn.AAGUID[0], c.WebAuthn.Transports[0] = 9, 9, 9, "x"
	s, _ := p.session("s")
	s.PublicKey[0] = 9
	w, _ := p.aheadWallet("w")
	w.Email = "x"

	c, _ = p.credential("c")
	if c.OAuth.Subject != "sub" || c.WebAuthn.CredentialID[0] != 1 || c.WebAuthn.PublicKey[0] != 2 ||
		c.WebAuthn.AAGUID[0] != 3 || c.WebAuthn.Transports[0] != "usb" {
		t.Fatalf("held credential changed through a copy: %+v %+v", c.OAuth, c.WebAuthn)
	}
	if s, _ = p.session("s"); s.PublicKey[0] != 4 {
		t.Fatalf("held session changed through a copy: %v", s.PublicKey)
	}
	if w, _ = p.aheadWallet("w"); w.Email != "a@example.com" {
		t.Fatalf("read-ahead account changed through a copy: %q", w.Email)
	}
	if !p.holds(heldCredentials) || !p.holds(heldSessions) || p.holds(heldWallets) {
		t.Fatal("holds does not report the tables held")
	}
}
