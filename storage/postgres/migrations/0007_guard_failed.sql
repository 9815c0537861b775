-- walletgate storage schema, version 7: a named failure for guarded writes.
--
-- A guarded write the store defers (a single-use record's consumption, a
-- request counted against its account's limit, a rate-limit hit) sends
-- nothing back that a caller reads before the commit, so when its guard
-- fails it must abort the transaction instead. It calls guard_failed,
-- which raises SQLSTATE WG001 naming the guard, so the store tells a
-- failed guard from every other error by that code alone.

-- The body stands on one line, so that a tool that ends statements at a
-- semicolon closing a line runs the CREATE whole.

CREATE FUNCTION guard_failed(guard text) RETURNS integer LANGUAGE plpgsql VOLATILE
    AS $$ BEGIN RAISE EXCEPTION 'walletgate: the guard of % failed', guard USING ERRCODE = 'WG001'; END $$;
