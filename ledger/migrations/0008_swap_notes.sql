-- Swaps on engines that keep a note with each view in the transaction that repoints it (DuckDB)
-- record no intent: the note carries a token, and the swap's row is written with its outcome,
-- carrying the same token, so that start-up recovery can tell a repoint the ledger has not
-- recorded yet. The ledger's identity is in each note, so that a warehouse shared by two ledgers
-- (or kept while the ledger was replaced) is not read as crashes of this one.
ALTER TABLE swaps ADD COLUMN token VARCHAR DEFAULT '';
CREATE TABLE ledger_identity (id VARCHAR NOT NULL);
INSERT INTO ledger_identity SELECT CAST(gen_random_uuid() AS VARCHAR);
