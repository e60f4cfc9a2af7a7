-- Per-partition fingerprints (rows, row-hash sum) of a version, taken at the moments that decide
-- what a swap, a rollback or a catch-up carries between the versions of a table (views/carry.go):
--   basis  of the live version, as a backfill run carried its partitions into the version it
--          builds (version names the built one; scope lists the partitions the run rebuilds)
--   live   of the version, as a publish made it live (the partitions outside the scope)
--   left   of the version, as a publish stopped it being live
-- A publish writes its marks just before it repoints (see views.recordMarks).
-- body: {"column":…, "type":…, "grain":…, "scope":[…], "parts":{"<start>":{"rows":…,"sum":"…"}}}
CREATE TABLE version_marks (
    target     VARCHAR NOT NULL,
    table_name VARCHAR NOT NULL,
    version    INTEGER NOT NULL,
    mark       VARCHAR NOT NULL,
    taken_at   TIMESTAMP NOT NULL,
    body       VARCHAR NOT NULL,
    PRIMARY KEY (target, table_name, version, mark)
);
