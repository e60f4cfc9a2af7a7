package sql

// Condition reports whether the column holds what the engine's WHERE takes as a condition: a
// BOOLEAN, or ClickHouse's UInt8, which its comparisons and AND, OR and NOT return (18.16 has
// no Bool type), or ClickHouse's untyped NULL, which a comparison with a NULL literal gives (and
// WHERE takes as false). A described `SELECT (expr)` column says whether expr is a condition in
// that engine, without trueup reading the expression's text.
func (c Column) Condition() bool {
	return c.Kind == TypeBool || BaseType(c.Type) == "UInt8" || c.UntypedNull()
}
