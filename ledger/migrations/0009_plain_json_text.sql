-- A swap's changes and an audit entry's params are JSON that trueup makes itself and reads back
-- whole; in JSON columns DuckDB parsed them again on every insert, half of what inserting a swap
-- cost (1.0 against 0.5 ms) while readers load the machine. They are plain text now.
ALTER TABLE swaps ALTER changes TYPE VARCHAR;
ALTER TABLE audit_log ALTER params TYPE VARCHAR;
