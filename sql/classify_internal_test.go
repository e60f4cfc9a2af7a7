package sql

import "testing"

// classify reads the types DuckDB and ClickHouse describe into portable kinds: containers are
// none of their elements (a BIGINT[] is not a number to total), and INTERVAL is not an integer.
func TestClassify(t *testing.T) {
	for typ, want := range map[string]Type{
		"BIGINT": TypeInt, "INTEGER": TypeInt, "UBIGINT": TypeInt, "HUGEINT": TypeInt, "UTINYINT": TypeInt,
		"Int32": TypeInt, "UInt64": TypeInt, "Nullable(Int8)": TypeInt, "Int128": TypeInt,
		"DECIMAL(18,2)": TypeDecimal, "Decimal(38, 10)": TypeDecimal, "DOUBLE": TypeFloat, "Float64": TypeFloat,
		"DATE": TypeDate, "TIMESTAMP WITH TIME ZONE": TypeTimestamp, "DateTime('UTC')": TypeTimestamp,
		"VARCHAR": TypeString, "LowCardinality(String)": TypeString, "UUID": TypeString, "BOOLEAN": TypeBool,
		"BIGINT[]": TypeOther, "DECIMAL(18,2)[]": TypeOther, "TIMESTAMP[3]": TypeOther, "INTEGER[][]": TypeOther,
		"STRUCT(k BIGINT)": TypeOther, "MAP(VARCHAR, INTEGER)": TypeOther, "UNION(i INTEGER, s VARCHAR)": TypeOther,
		"Array(Int32)": TypeOther, "Tuple(UInt64, String)": TypeOther, "Nested(a Int32)": TypeOther,
		"INTERVAL": TypeOther, "VARINT": TypeOther, "BLOB": TypeOther,
	} {
		if got, _ := classify(typ); got != want {
			t.Errorf("classify(%q) = %v, want %v", typ, got, want)
		}
	}
}
