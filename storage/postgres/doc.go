// Package postgres is the PostgreSQL [storage.Store] of walletgate, for
// services that run several replicas against one database.
//
// The host owns the connection pool (a [pgxpool.Pool] from
// github.com/jackc/pgx/v5) and passes it to [New]. The schema is created and
// upgraded by [Migrate], which every replica may run at start-up: it takes an
// advisory lock, applies the embedded migrations that are missing in one
// transaction and records them in the schema_migrations table.
//
// # Migrations and upgrades
//
// A host that runs its own migration tool (goose, golang-migrate, Atlas,
// Flyway) takes the SQL from [Migrations] instead: one script per version,
// in order, each to run once in one transaction. Each script records its
// version in schema_migrations as [Migrate] does, so the two can be mixed
// and either finds the other's work applied. [New] does no I/O and checks
// nothing; at start-up, after opening the pool and before serving, such a
// host calls [CheckSchema], which reports a schema that lacks migrations
// ([ErrSchemaBehind]) or has a newer release's ([ErrSchemaAhead]), naming
// the versions, or records an isolation level other than the store's
// ([ErrSchemaIsolation], see Transactions). A host that calls Migrate at
// start-up needs no check.
//
// Migrations are additive, so the release before a migration keeps working
// on the schema after it: a migration adds tables, indexes, and columns
// that are nullable or have a default; it never drops or renames a table or
// column an earlier release reads or writes, and never adds a constraint
// that its rows could break. The one kind of data it may delete is
// short-lived secrets that must not survive an upgrade (version 2 deleted
// the plaintext one-time codes, ending the logins in progress). To upgrade
// a running fleet: apply the new release's migrations first (Migrate from
// one replica of the new release or a deploy job, or the host's tool), then
// replace the replicas one by one. The replicas of the previous release
// keep serving on the newer schema meanwhile: Migrate leaves versions it does
// not know alone, and CheckSchema's ErrSchemaAhead is safe for them to log
// and continue. Skipping a release is safe too, since the migrations of
// every skipped release apply in order. A release that needs to remove a
// column does it in two steps: one release stops using it, a later one
// drops it.
//
// # Schema
//
// Every table lives in one schema ([Config.Schema], [DefaultSchema] unless
// set). Statements name their tables schema-qualified; search_path is
// never consulted, so one pool can serve stores of several schemas. Times are
// timestamptz, stored at microsecond precision (finer digits are truncated)
// and returned in UTC. The opaque JSON fields (ExternalAccount.Info,
// PendingRequest.Data, Event.Payload) and every byte field are bytea, so they
// come back byte for byte: no key reordering, no whitespace changes, no
// validation. A DBA reads them with convert_from(col, 'UTF8')::json.
//
// # Transactions
//
// [Store.Atomic] is one PostgreSQL transaction at READ COMMITTED (or
// SERIALIZABLE, see [Config.Isolation]) on one pooled connection. Its BEGIN
// travels with its first statement that writes or locks, so a transaction
// that writes costs one round trip more than its statements (the COMMIT).
// At READ COMMITTED, plain reads that come before that statement run
// outside the transaction block: each statement reads its own snapshot and
// such a read has no write of the transaction to see, so it reads the
// same; a transaction that only reads costs no COMMIT. At SERIALIZABLE
// every read runs inside the block, where the serializable checks see it.
// The level is the schema's: serializable checks see only serializable
// transactions, so every store of one schema (every replica, and every
// host transaction bound to one) runs at one level. The schema records it
// in its store_settings table: [Migrate], and the script of [Migrations]
// that creates that table, record the level of the Config they are given
// when none is recorded, and Migrate and [CheckSchema] refuse a store
// configured at another level with an error wrapping
// [ErrSchemaIsolation], naming both levels.
// Every method the storage contract calls deferrable is deferred: it sends
// nothing when called and travels with the transaction's next statement or
// with its COMMIT, which then costs no round trip of its own (inside a
// host's transaction it is sent at once). Its statement raises an error
// rather than skip a duplicate, so a deferred write that fails aborts the
// transaction and is reported by the statement or commit that carried it,
// as the contract's rule asks; a guarded one (the quota of
// PendingRequests.Create, RateLimits.Hit, the Consume methods) calls the
// schema's function guard_failed when its guard fails, which raises
// SQLSTATE WG001 naming the guard (migration 7), and the store reports
// that as the contract's error (a *storage.LimitError or ErrDuplicate, or
// a *storage.RateLimitError, read after the rollback; a
// *storage.ConsumeError). Reads of rows the transaction holds locked
// (InternalAccounts.Lock, Credentials.Lock, the signer locks) are answered
// from what the lock read until a statement of the transaction writes or
// locks that table: no one else can change a row while it is held. Which
// tables a statement touches, and whether it only reads, is declared with
// the statement, not read from its SQL: a statement that is not a plain
// read invalidates the kept rows of every table it declares, when it is
// sent or deferred. Credentials.Lock also reads the credential's account
// in its round trip, right after the lock, unless the transaction holds an
// account already, and InternalAccounts.Get answers from that read until
// the transaction sends its next statement or defers a write that declares
// the account's table: nothing of the transaction ran in between, so at
// READ COMMITTED it reads what its own statement would have.
// Credentials.Lock with an attempt sends the attempt the same way, right
// after the lock, in the same round trip (see below).
// Serialization failures and deadlocks are rerun a bounded number of times
// ([Config.MaxRetries]). A cancelled context rolls back: with pgx's default
// settings a statement in flight is interrupted by closing its connection
// after a cancel request, so the server stops it and aborts the transaction
// promptly.
// The Tx serializes its statements, so fn may hand it to goroutines, but
// statements never overlap.
//
// # Round trips of the signed flows
//
// walletauth's TestRoundTripsPostgres counts, on one warm connection
// (statements prepared), the round trips and statements of every signed
// flow, and fails when one grows; the counts live there alone.
//
// Every signed operation follows the same pattern: its first leg costs its
// own reads plus one round trip for the challenge (the insert is deferred
// to the COMMIT), and its retry one read of the request, one round trip
// for BEGIN, the request's consumption (deferred, see Spend) and the
// signer's locks (Sessions.LockSigner or LockSignersByKey, whose rows
// later reads of the transaction take without a round trip), then its
// effect's statements, the last of them with the COMMIT when it is a
// deferred write. A retry bound to a key (an OTP login's second leg) has no
// signer to lock and consumes its request in a round trip of its own, so
// that its expiry is decided after that consumption's lock. An HTTP host
// adds its own reads; the sandbox's handler adds none to these flows.
//
// # Relay leases
//
// Outbox.Lease costs about the same whatever waits behind the heads of the
// accounts: it finds each account's first pending event by a loose index
// scan of the pending (account_id, seq) index when few accounts have
// pending events, and among the first pending events in seq order when
// many do, never by reading the events queued behind a head. Its plan
// relies on the table's statistics no more than on how small its limits
// are, which are part of the statement; a table never analyzed since its
// creation (a fresh schema, before autovacuum ran) can still get a poor
// plan until it is.
//
// # Host transactions
//
// A host that keeps its own tables in the same database runs walletgate's
// writes inside a transaction it began, in one pattern for every operation
// that accepts one (logins and ownership proofs, which record what they
// refuse, commit on their own and refuse it: see [Store.WithTx]):
//
//	tx, err := pool.Begin(ctx) // at the store's level: READ COMMITTED unless Config.Isolation says SERIALIZABLE
//	if err != nil { ... }
//	defer tx.Rollback(ctx)
//	hctx := store.WithTx(ctx, tx)
//	// Any operation given hctx (CreateWallet, RegisterAccount, SetStatus,
//	// UpdateEmail, Authorize, ...) writes in tx; and around an ...In form:
//	err = store.Atomic(hctx, func(wt storage.Tx) error {
//		if _, err := own.CheckPayoutIn(ctx, wt, payout); err != nil {
//			return err
//		}
//		pg, err := postgres.HostTx(ctx, wt) // the same tx, for the host's rows
//		if err != nil {
//			return err
//		}
//		_, err = pg.Exec(ctx, "INSERT INTO ledger ...")
//		return err
//	})
//	if err != nil { return err } // tx is still usable: roll back, or go on
//	return tx.Commit(ctx)
//
// An effect of a signed retry (walletauth's HostOperation.Effect,
// signedretry's Effect) reaches the transaction the same way, with
// [HostTx]. [Store.WithTx] binds the transaction to the store through the
// context; [Store.Atomic] then runs in a savepoint of it, commits nothing,
// and never reruns: a serialization failure or deadlock comes back at once
// wrapping [ErrRerun], for the host to roll back and run again. The host's
// own statements, and its COMMIT at SERIALIZABLE, report the same conflicts
// with SQLSTATE 40001 or 40P01; [Rerunnable] reports both kinds, so one
// check decides whether to run the transaction again.
//
// # Exactly once across replicas
//
// Single-use records are consumed by one UPDATE (or DELETE) whose WHERE clause
// is the precondition (consumed_at IS NULL AND expires_at > now, or
// version = expected), so two replicas racing on one row serialize on its row
// lock and the second finds the precondition false; only then does a read
// decide which sentinel error it gets. Uniqueness rules are unique indexes,
// and inserts use ON CONFLICT DO NOTHING, so a duplicate is reported as
// [storage.ErrDuplicate] without aborting the transaction. Credential updates,
// whose uniqueness clash only an index can detect, run inside a savepoint for
// the same reason. Two upserts are the exception: OwnershipChallenges.Put and
// OTPIssuances.Put replace the row of the account (credential) in one
// statement, and an id that is already another account's (credential's)
// aborts the transaction with an error wrapping [storage.ErrDuplicate].
//
// An OTP attempt is such an UPDATE too: Credentials.Lock with an attempt
// sends, right after the credential's locking read, one statement that
// reads the credential's issuance, the budget's hit (the rate-limit
// upsert, whose WHERE clause is the budget, made only for an issuance live
// for an attempt) and the UPDATE of the attempt, whose WHERE clause holds
// attempts < limit (so no more than the limit pass across replicas),
// conditioned on the hit's returned row, so a refused hit reserves
// nothing and an issuance that is not live counts nothing.
// Rules that span rows are kept by locks held to the end of the transaction:
// InternalAccounts.Lock and Credentials.Lock are SELECT ... FOR UPDATE of the
// row, and Credentials.LockEmail is a transaction-level advisory lock derived
// from the schema and the address. Sessions.LockSigner sends three
// statements in one round trip, in the lock order: the account FOR UPDATE,
// then the session's credential and the session FOR SHARE. A shared lock
// conflicts with the UPDATE of a session revoke and the DELETE of a
// credential, which therefore wait for the signed operation to commit; a
// lock that waited for one of them reads the row as committed (or finds it
// gone). Locks are taken in the order of the storage contract: internal
// accounts (ascending id), an email address, credentials, sessions,
// external accounts, a host's records.
//
// PendingRequests.Create within an account's quota takes a
// transaction-level advisory lock of the account's pending requests and then inserts with the count of its live
// requests in the WHERE clause, two statements in one round trip: the
// insert's snapshot is taken after the lock was granted, so it counts every
// request committed under the lock. It counts only the requests stored
// without a scope (bound_scope NULL).
//
// PendingRequests.Create within a scope's quota takes a transaction-level
// advisory lock of the scope and then, in one statement, deletes what the scope no longer
// keeps (its requests consumed or expired, and all but the limit-1 newest
// live ones) and inserts the request with its scope in bound_scope: two
// statements, deferred like the other deferrable writes, so a passkey
// login challenge costs one round trip for BEGIN, these two statements and
// the COMMIT, as it did when it counted against the account. The
// statement's snapshot is taken after the lock was granted, so it sees
// every request committed under the lock.
//
// PayoutUsages.Hold is a transaction-level advisory lock of the customer's
// payouts and the read of its usages, two statements in one round trip:
// the read's snapshot is taken after the lock was granted, so it sees every
// usage recorded under the lock. Record is a deferred INSERT. A payout that
// rolls back leaves no row. Under SERIALIZABLE the reads and inserts of two
// holders also conflict, so one of them reruns.
//
// A host's records (storage.Records) are rows of host_records, keyed by
// kind and key (migration 12). Create inserts with ON CONFLICT DO NOTHING:
// of concurrent creates of one kind and key, on any replica, the later
// waits for the earlier's transaction and then finds the row (or, under
// SERIALIZABLE, reruns). Lock is SELECT ... FOR UPDATE of the row and
// Update a compare-and-set UPDATE on version, so a read-modify-write
// under Lock loses no update across replicas. List reads the records of a
// kind and group in the order they were inserted (seq, through the index
// on kind, group and seq). None of the methods is deferred: each reports
// its failure when it returns. Kind, Key and Group are text, so
// [ErrUnstorable] applies to them as to ids. Sweep never deletes a record.
//
// Outbox appends take a transaction-level advisory lock of the event's
// account before drawing Seq, so the Seq of one account's events increases
// in commit order; transactions appending events of one account therefore
// serialize from their first such Append to their end.
//
// # Limits of PostgreSQL text
//
// PostgreSQL text holds neither NUL bytes nor invalid UTF-8, and a btree
// index entry has a size limit. Strings that cannot be stored are refused with
// an error wrapping [ErrUnstorable] before any statement is sent, so the
// transaction stays usable; lookups by such a key answer
// [storage.ErrNotFound], since no stored record can have it.
//
// # Telemetry
//
// With [Config.Telemetry] set, every [Store.Atomic] call (inside a host
// transaction too) is recorded under the instrumentation scope
// "github.com/walletgate/walletgate/storage/postgres":
//
//   - a client span "storage.transaction" with db.system.name=postgresql,
//     walletgate.transaction.retries (the reruns, when any) and, when it
//     failed, error.type (the SQLSTATE when the database answered, the API
//     error code or storage sentinel the function returned, or
//     context.Canceled, context.DeadlineExceeded, _OTHER); its status is
//     Error only for outcome "error";
//   - walletgate.storage.transaction.duration, a histogram in seconds
//     (retries and their backoff included) with db.system.name,
//     walletgate.outcome (ok; refused when the function rolled back with an
//     answer of the contract such as storage.ErrNotFound, storage.ErrConflict
//     or a 4xx *apierror.Error; error otherwise) and error.type;
//   - walletgate.storage.transaction.retries, a counter of reruns after a
//     serialization failure, a deadlock or a connection lost before
//     anything was sent;
//   - a Warn record when the reruns ran out (ErrRerun) and an Error record
//     for any other failure of outcome "error" but a cancelled context,
//     with the keys operation, code (the error type), retries and error.
//     The server's message text is replaced by its SQLSTATE and constraint
//     name in the logged error, since it may quote a value of the
//     statement; no statement argument is ever recorded.
//
// Without providers the telemetry costs about a hundred nanoseconds and no
// allocation per transaction: no span is started and the measurements go
// to no-op instruments (see BenchmarkTransactionTelemetry).
package postgres
