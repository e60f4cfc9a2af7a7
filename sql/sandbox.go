package sql

import (
	"errors"
	"fmt"
	"strings"
	"trueup/fault"
)

// User SQL — rules, exposures, backfill transforms, time-travel queries — reads the warehouse and
// nothing else: whoever can commit a rule file must not get the server's files, credentials or
// network. Three layers, each closing what the one before cannot see:
//
//   - here, at load time: a call to a function that reads files or reaches the network (either
//     engine's) is refused with its position, so the author learns it at path:line;
//   - DuckDB targets are opened with external access off and the configuration locked, so no
//     statement can read a file (including FROM 'x.csv' replacement scans), ATTACH, COPY, or
//     load an extension, nor switch that back on;
//   - ClickHouse reads run with readonly=1, under which 18.16 refuses every table function.

// outsideFuncs are the functions that read files, other servers or the network: DuckDB's file
// readers and ClickHouse's table functions over files, URLs and other databases. query() runs
// SQL text of its own that this check cannot see. Matched without regard to case: refusing a
// differently-cased name is safe, missing one is not.
var outsideFuncs = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`
		read_text read_blob read_csv read_csv_auto sniff_csv read_parquet parquet_scan parquet_metadata
		parquet_schema parquet_file_metadata parquet_kv_metadata parquet_bloom_probe read_json
		read_json_auto read_json_objects read_json_objects_auto read_ndjson read_ndjson_auto
		read_ndjson_objects glob read_xlsx st_read iceberg_scan iceberg_metadata iceberg_snapshots
		delta_scan query query_table json_execute_serialized_sql
		url urlCluster file fileCluster remote remoteSecure cluster clusterAllReplicas mysql postgresql
		jdbc odbc s3 s3Cluster gcs oss cosn azureBlobStorage azureBlobStorageCluster hdfs hdfsCluster
		input executable sqlite mongodb redis iceberg icebergS3 icebergAzure icebergHDFS icebergLocal
		icebergCluster deltaLake deltaLakeCluster hudi hudiCluster catboostEvaluate`) {
		outsideFuncs[strings.ToLower(f)] = true
	}
}

// PosError is a problem at a byte offset of SQL text; Line says which line of it.
type PosError struct {
	Offset int
	Line   int // 0 for the text's first line
	Msg    string
	Kind   error // wrapped sentinel, if any
}

func (e *PosError) Error() string { return e.Msg }
func (e *PosError) Unwrap() error { return e.Kind }

// LineOf returns the line of err within the SQL text it was found in (0 for the first line, and
// for errors that carry no position): callers add it to the line the text starts on.
func LineOf(err error) int {
	var pe *PosError
	if errors.As(err, &pe) {
		return pe.Line
	}
	return 0
}

func posError(text string, offset int, kind error, format string, args ...any) *PosError {
	return &PosError{Offset: offset, Line: strings.Count(text[:offset], "\n"), Msg: fmt.Sprintf(format, args...), Kind: kind}
}

// outside finds the first call in toks that reads outside the warehouse: a call to one of
// outsideFuncs (qualified or quoted names included), or a file named as a string after FROM or
// JOIN (DuckDB reads FROM 'x.csv' as the file).
func outside(text string, toks []Token) error {
	// selects[d]: a SELECT was seen at paren depth d, so a FROM there names relations (the FROM
	// of extract(year FROM d) or trim('x' FROM s) does not)
	selects := []bool{false}
	for i, t := range toks {
		switch t.Text {
		case "(":
			selects = append(selects, false)
			continue
		case ")":
			if len(selects) > 1 {
				selects = selects[:len(selects)-1]
			}
			continue
		}
		if t.Literal() || i+1 >= len(toks) {
			continue
		}
		next := toks[i+1]
		if name := t.Ident(); name != "" && next.Text == "(" && outsideFuncs[strings.ToLower(name)] {
			return posError(text, t.Pos, fault.ErrInvalid,
				"SQL calls %s(), which reads files or the network outside the warehouse: rule, transform and report SQL may read only the warehouse's tables", name)
		}
		switch w := strings.ToUpper(t.Text); {
		case w == "SELECT" && !t.Quoted():
			selects[len(selects)-1] = true
		case (w == "FROM" || w == "JOIN") && !t.Quoted() && selects[len(selects)-1] && next.Literal():
			return posError(text, next.Pos, fault.ErrInvalid,
				"SQL reads the file %s, outside the warehouse: rule, transform and report SQL may read only the warehouse's tables", next.Text)
		}
	}
	return nil
}

// Inside checks that a piece of user SQL — an expression such as a rule's measure, or a whole
// statement — reads nothing outside the warehouse (see outside).
func Inside(text string) error { return outside(text, Lex(text)) }

// duckSandbox is the configuration a DuckDB target opens with: no file but the database itself
// (and its spill directory), no ATTACH, COPY, extension install or load, no network; and, once
// lockDuck has set the time zone, no SET that could switch it back.
const duckSandbox = "enable_external_access=false"
