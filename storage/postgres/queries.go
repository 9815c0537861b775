package postgres

import (
	"fmt"
	"strings"
)

// queries holds every statement with the store's quoted schema in place of
// {s}. Each store renders its own at New, so statements of different
// schemas never share a prepared statement.
type queries struct {
	extInsert, extGet, extLock, extUpdate, extExists, extList                                       string
	walletInsert, walletGet, walletUpdate, walletExists, walletList, walletLock                     string
	challengePut, challengeGet, challengeConsume                                                    string
	credInsert, credGet, credUpdate, credExists, credDelete, credList, credByWebAuthn, credByEmail  string
	credLock, walletOfCred                                                                          string
	otpPut, otpGet, otpConsume, otpSpend, otpState, otpAttempt, otpAttemptState, otpLockAttempt     string
	sessionInsert, sessionGet, sessionActive, sessionRevoke, sessionExists, sessionRevokeAll        string
	signerAccount, signerCredential, signerSession, signerKeyCredentials, signerKeySessions         string
	pendingLimited, pendingLiveState, pendingBounded                                                string
	pendingInsert, pendingGet, pendingConsume, pendingSpend, pendingLimitedDefer, pendingState      string
	outboxInsert, outboxLease, outboxMark, outboxFail, outboxFailState, outboxParked, outboxRedrive string
	outboxList                                                                                      string
	limitHit, limitHitDefer, limitOpen, limitEnd                                                    string
	idemBegin, idemGet, idemComplete, idemExists, idemRelease                                       string
	sweep                                                                                           [sweepTables]string
}

func renderQueries(quotedSchema string) queries {
	r := strings.NewReplacer("{s}", quotedSchema)
	q := queries{
		extInsert: r.Replace(extInsertSQL), extGet: r.Replace(extGetSQL), extLock: r.Replace(extLockSQL), extUpdate: r.Replace(extUpdateSQL),
		extExists: r.Replace(extExistsSQL), extList: r.Replace(extListSQL),
		walletInsert: r.Replace(walletInsertSQL), walletGet: r.Replace(walletGetSQL), walletUpdate: r.Replace(walletUpdateSQL),
		walletExists: r.Replace(walletExistsSQL), walletList: r.Replace(walletListSQL), walletLock: r.Replace(walletLockSQL),
		challengePut: r.Replace(challengePutSQL), challengeGet: r.Replace(challengeGetSQL), challengeConsume: r.Replace(challengeConsumeSQL),
		credInsert: r.Replace(credInsertSQL), credGet: r.Replace(credGetSQL), credUpdate: r.Replace(credUpdateSQL),
		credExists: r.Replace(credExistsSQL), credDelete: r.Replace(credDeleteSQL), credList: r.Replace(credListSQL),
		credByWebAuthn: r.Replace(credByWebAuthnSQL), credByEmail: r.Replace(credByEmailSQL), credLock: r.Replace(credLockSQL),
		walletOfCred: r.Replace(walletOfCredSQL),
		otpPut:       r.Replace(otpPutSQL), otpGet: r.Replace(otpGetSQL),
		otpConsume: r.Replace(otpConsumeSQL), otpSpend: r.Replace(otpSpendSQL), otpState: r.Replace(otpStateSQL),
		otpAttempt: r.Replace(otpAttemptSQL), otpAttemptState: r.Replace(otpAttemptStateSQL), otpLockAttempt: r.Replace(otpLockAttemptSQL),
		sessionInsert: r.Replace(sessionInsertSQL), sessionGet: r.Replace(sessionGetSQL), sessionActive: r.Replace(sessionActiveSQL),
		sessionRevoke: r.Replace(sessionRevokeSQL), sessionExists: r.Replace(sessionExistsSQL), sessionRevokeAll: r.Replace(sessionRevokeAllSQL),
		signerAccount: r.Replace(signerAccountSQL), signerCredential: r.Replace(signerCredentialSQL), signerSession: r.Replace(signerSessionSQL),
		signerKeyCredentials: r.Replace(signerKeyCredentialsSQL), signerKeySessions: r.Replace(signerKeySessionsSQL),
		pendingLimited: r.Replace(pendingLimitedSQL), pendingLiveState: r.Replace(pendingLiveStateSQL), pendingBounded: r.Replace(pendingBoundedSQL),
		pendingInsert: r.Replace(pendingInsertSQL), pendingGet: r.Replace(pendingGetSQL),
		pendingConsume: r.Replace(pendingConsumeSQL), pendingSpend: r.Replace(pendingSpendSQL), pendingLimitedDefer: r.Replace(pendingLimitedDeferSQL), pendingState: r.Replace(pendingStateSQL),
		outboxInsert: r.Replace(outboxInsertSQL), outboxLease: r.Replace(outboxLeaseSQL),
		outboxFail: r.Replace(outboxFailSQL), outboxFailState: r.Replace(outboxFailStateSQL),
		outboxParked: r.Replace(outboxParkedSQL), outboxRedrive: r.Replace(outboxRedriveSQL),
		outboxMark: r.Replace(outboxMarkSQL), outboxList: r.Replace(outboxListSQL),
		limitHit: r.Replace(limitHitSQL), limitHitDefer: r.Replace(limitHitDeferSQL), limitOpen: r.Replace(limitOpenSQL), limitEnd: r.Replace(limitEndSQL),
		idemBegin: r.Replace(idemBeginSQL), idemGet: r.Replace(idemGetSQL), idemComplete: r.Replace(idemCompleteSQL),
		idemExists: r.Replace(idemExistsSQL), idemRelease: r.Replace(idemReleaseSQL),
	}
	for i, t := range sweepTargets() {
		q.sweep[i] = r.Replace(fmt.Sprintf(sweepSQL, t.table, t.column))
	}
	return q
}
