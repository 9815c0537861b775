package postgres

import (
	"fmt"
	"math/bits"
	"strings"
)

// table is one table of the store's schema.
type table uint8

// The tables of the store's schema.
const (
	tableExternalAccounts table = iota
	tableInternalAccounts
	tableOwnershipChallenges
	tableCredentials
	tableOTPIssuances
	tableSessions
	tablePendingRequests
	tableOutboxEvents
	tableRateLimitWindows
	tableIdempotencyKeys
	tablePayoutUsages
	tablePayoutApprovals
	tableHostRecords
	numTables
)

// tableNames are the tables' names in the schema, by table.
var tableNames = [numTables]string{
	tableExternalAccounts:    "external_accounts",
	tableInternalAccounts:    "internal_accounts",
	tableOwnershipChallenges: "ownership_challenges",
	tableCredentials:         "credentials",
	tableOTPIssuances:        "otp_issuances",
	tableSessions:            "sessions",
	tablePendingRequests:     "pending_requests",
	tableOutboxEvents:        "outbox_events",
	tableRateLimitWindows:    "rate_limit_windows",
	tableIdempotencyKeys:     "idempotency_keys",
	tablePayoutUsages:        "payout_usages",
	tablePayoutApprovals:     "payout_approvals",
	tableHostRecords:         "host_records",
}

// String returns the table's name in the schema.
func (t table) String() string {
	if t < numTables {
		return tableNames[t]
	}
	return fmt.Sprintf("table(%d)", uint8(t))
}

// tableSet is a set of tables of the schema.
type tableSet uint16

// allTables holds every table of the schema.
const allTables = tableSet(1)<<numTables - 1

// tablesOf returns the set of ts.
func tablesOf(ts ...table) tableSet {
	var s tableSet
	for _, t := range ts {
		s |= 1 << t
	}
	return s
}

// has reports whether t is in s.
func (s tableSet) has(t table) bool { return s&(1<<t) != 0 }

// list returns the tables of s in declaration order.
func (s tableSet) list() []table {
	out := make([]table, 0, bits.OnesCount16(uint16(s)))
	for t := table(0); t < numTables; t++ {
		if s.has(t) {
			out = append(out, t)
		}
	}
	return out
}

// String lists the names of the tables of s.
func (s tableSet) String() string {
	names := make([]string, 0, numTables)
	for _, t := range s.list() {
		names = append(names, t.String())
	}
	return "{" + strings.Join(names, ", ") + "}"
}

// stmtKind says what a statement does to the rows it names, which decides
// how the transaction sends it (see tx.send) and what it invalidates of
// the rows the transaction keeps (see pipeline).
type stmtKind uint8

const (
	// kindRead is a plain SELECT: it neither writes nor locks (no FOR
	// UPDATE, no FOR SHARE, no advisory lock). It may run before the
	// transaction begins, and it invalidates nothing.
	kindRead stmtKind = iota + 1
	// kindLock takes row or advisory locks, and may read the rows it
	// locks; it writes nothing.
	kindLock
	// kindWrite changes rows (it may lock and read too), or controls the
	// transaction (savepoints).
	kindWrite
)

// String names the kind.
func (k stmtKind) String() string {
	switch k {
	case kindRead:
		return "read"
	case kindLock:
		return "lock"
	case kindWrite:
		return "write"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// stmt is one statement of the store: its SQL with the store's quoted
// schema in place of {s}, its kind, and the tables it reads, locks or
// writes. The transaction decides from kind and tables alone, never from
// the SQL text, whether a batch may run before the transaction begins and
// which kept rows a statement invalidates.
type stmt struct {
	sql    string
	kind   stmtKind
	tables tableSet
}

// queries holds every statement of the store, rendered for the store's
// schema. Each store renders its own at New, so statements of different
// schemas never share a prepared statement.
type queries struct {
	extInsert, extGet, extLock, extUpdate, extExists, extList                                       stmt
	walletInsert, walletGet, walletUpdate, walletExists, walletList, walletLock, walletMarkChanged  stmt
	challengePut, challengeGet, challengeConsume                                                    stmt
	credInsert, credGet, credUpdate, credExists, credDelete, credList, credByWebAuthn, credByEmail  stmt
	credLock, walletOfCred, walletOfSess                                                            stmt
	otpPut, otpGet, otpSpend, otpLockAttempt                                                        stmt
	sessionInsert, sessionGet, sessionActive, sessionRevoke, sessionExists, sessionRevokeAll        stmt
	signerAccount, signerCredential, signerSession, signerKeyCredentials, signerKeySessions         stmt
	pendingLimited, pendingLiveState, pendingBounded                                                stmt
	pendingGet, pendingSpend, pendingLimitedDefer                                                   stmt
	outboxInsert, outboxLease, outboxMark, outboxFail, outboxFailState, outboxParked, outboxRedrive stmt
	outboxList                                                                                      stmt
	limitHit, limitHitDefer, limitOpen, limitEnd                                                    stmt
	idemBegin, idemGet, idemComplete, idemExists, idemRelease                                       stmt
	usageInsert, usageSince                                                                         stmt
	approvalInsert, approvalLock, approvalUpdate, approvalExists                                    stmt
	recordInsert, recordGet, recordLock, recordUpdate, recordExists, recordList                     stmt
	savepoint, release, rollbackTo, advisoryLock                                                    stmt
	sweep                                                                                           [sweepTables]stmt
}

// renderQueries declares every statement, its template, kind and tables,
// and renders it for quotedSchema.
func renderQueries(quotedSchema string) queries {
	r := strings.NewReplacer("{s}", quotedSchema)
	d := func(template string, kind stmtKind, ts ...table) stmt {
		return stmt{sql: r.Replace(template), kind: kind, tables: tablesOf(ts...)}
	}
	const (
		read  = kindRead
		lock  = kindLock
		write = kindWrite
	)
	var (
		ext         = tableExternalAccounts
		wallets     = tableInternalAccounts
		challenges  = tableOwnershipChallenges
		creds       = tableCredentials
		otps        = tableOTPIssuances
		sessions    = tableSessions
		pending     = tablePendingRequests
		outbox      = tableOutboxEvents
		windows     = tableRateLimitWindows
		idempotency = tableIdempotencyKeys
		usage       = tablePayoutUsages
		approvals   = tablePayoutApprovals
		records     = tableHostRecords
	)
	q := queries{
		extInsert: d(extInsertSQL, write, ext),
		extGet:    d(extGetSQL, read, ext),
		extLock:   d(extLockSQL, lock, ext),
		extUpdate: d(extUpdateSQL, write, ext),
		extExists: d(extExistsSQL, read, ext),
		extList:   d(extListSQL, read, ext),

		walletInsert:      d(walletInsertSQL, write, wallets),
		walletGet:         d(walletGetSQL, read, wallets),
		walletUpdate:      d(walletUpdateSQL, write, wallets),
		walletExists:      d(walletExistsSQL, read, wallets),
		walletList:        d(walletListSQL, read, wallets),
		walletLock:        d(walletLockSQL, lock, wallets),
		walletMarkChanged: d(walletMarkChangedSQL, write, wallets),
		walletOfCred:      d(walletOfCredSQL, read, wallets, creds),
		walletOfSess:      d(walletOfSessSQL, read, wallets, sessions),

		challengePut:     d(challengePutSQL, write, challenges),
		challengeGet:     d(challengeGetSQL, read, challenges),
		challengeConsume: d(challengeConsumeSQL, write, challenges),

		credInsert:     d(credInsertSQL, write, creds),
		credGet:        d(credGetSQL, read, creds),
		credUpdate:     d(credUpdateSQL, write, creds),
		credExists:     d(credExistsSQL, read, creds),
		credDelete:     d(credDeleteSQL, write, creds),
		credList:       d(credListSQL, read, creds),
		credByWebAuthn: d(credByWebAuthnSQL, read, creds),
		credByEmail:    d(credByEmailSQL, read, creds),
		credLock:       d(credLockSQL, lock, creds),

		otpPut:         d(otpPutSQL, write, otps),
		otpGet:         d(otpGetSQL, read, otps),
		otpSpend:       d(otpSpendSQL, write, otps),
		otpLockAttempt: d(otpLockAttemptSQL, write, otps, windows),

		sessionInsert:    d(sessionInsertSQL, write, sessions),
		sessionGet:       d(sessionGetSQL, read, sessions),
		sessionActive:    d(sessionActiveSQL, read, sessions),
		sessionRevoke:    d(sessionRevokeSQL, write, sessions),
		sessionExists:    d(sessionExistsSQL, read, sessions),
		sessionRevokeAll: d(sessionRevokeAllSQL, write, sessions),

		signerAccount:        d(signerAccountSQL, lock, wallets),
		signerCredential:     d(signerCredentialSQL, lock, creds, sessions),
		signerSession:        d(signerSessionSQL, lock, sessions),
		signerKeyCredentials: d(signerKeyCredentialsSQL, lock, creds, sessions),
		signerKeySessions:    d(signerKeySessionsSQL, lock, sessions),

		pendingGet:          d(pendingGetSQL, read, pending),
		pendingSpend:        d(pendingSpendSQL, write, pending),
		pendingLimited:      d(pendingLimitedSQL, write, pending),
		pendingLimitedDefer: d(pendingLimitedDeferSQL, write, pending),
		pendingLiveState:    d(pendingLiveStateSQL, read, pending),
		pendingBounded:      d(pendingBoundedSQL, write, pending),

		outboxInsert:    d(outboxInsertSQL, write, outbox),
		outboxLease:     d(outboxLeaseSQL, write, outbox),
		outboxMark:      d(outboxMarkSQL, write, outbox),
		outboxFail:      d(outboxFailSQL, write, outbox),
		outboxFailState: d(outboxFailStateSQL, read, outbox),
		outboxParked:    d(outboxParkedSQL, read, outbox),
		outboxRedrive:   d(outboxRedriveSQL, write, outbox),
		outboxList:      d(outboxListSQL, read, outbox),

		limitHit:      d(limitHitSQL, write, windows),
		limitHitDefer: d(limitHitDeferSQL, write, windows),
		limitOpen:     d(limitOpenSQL, write, windows),
		limitEnd:      d(limitEndSQL, read, windows),

		idemBegin:    d(idemBeginSQL, write, idempotency),
		idemGet:      d(idemGetSQL, read, idempotency),
		idemComplete: d(idemCompleteSQL, write, idempotency),
		idemExists:   d(idemExistsSQL, read, idempotency),
		idemRelease:  d(idemReleaseSQL, write, idempotency),

		usageInsert: d(usageInsertSQL, write, usage),
		usageSince:  d(usageSinceSQL, read, usage),

		approvalInsert: d(approvalInsertSQL, write, approvals),
		approvalLock:   d(approvalLockSQL, lock, approvals),
		approvalUpdate: d(approvalUpdateSQL, write, approvals),
		approvalExists: d(approvalExistsSQL, read, approvals),

		recordInsert: d(recordInsertSQL, write, records),
		recordGet:    d(recordGetSQL, read, records),
		recordLock:   d(recordLockSQL, lock, records),
		recordUpdate: d(recordUpdateSQL, write, records),
		recordExists: d(recordExistsSQL, read, records),
		recordList:   d(recordListSQL, read, records),

		// Transaction control and the advisory lock name no table.
		savepoint:    d(savepointSQL, write),
		release:      d(releaseSQL, write),
		rollbackTo:   d(rollbackToSQL, write),
		advisoryLock: d(advisoryLockSQL, lock),
	}
	for i, t := range sweepTargets() {
		q.sweep[i] = d(fmt.Sprintf(sweepSQL, t.table, t.column), write, t.table)
	}
	return q
}
