-- walletgate storage schema, version 10: the settings every store of the
-- schema shares.
--
-- One row per setting, which every store (every replica, and every host
-- transaction bound to one) of the schema must be configured with. The one
-- setting is 'isolation', the level of Config.Isolation ('read committed'
-- or 'serializable'): serializable checks see only serializable
-- transactions, so stores of one schema run at one level. Migrate, and the
-- script of this version that Migrations renders, record the level of the
-- store that migrates when none is recorded; Migrate and CheckSchema
-- refuse a store configured at another level.

CREATE TABLE store_settings (
    name  text PRIMARY KEY,
    value text NOT NULL
);
