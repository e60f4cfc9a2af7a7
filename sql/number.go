package sql

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Number is a float an engine computed (a total, a change in percent) as JSON carries it: a
// finite one as a JSON number, NaN and the infinities as the text AsText gives them ("NaN",
// "+Inf", "-Inf"), as query results and samples show them. JSON has no such numbers and
// encoding/json refuses them, yet a DOUBLE column's total is one as soon as one of its values is.
type Number float64

// MarshalJSON writes a finite value as a number, another as its name.
func (n Number) MarshalJSON() ([]byte, error) {
	x := float64(n)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return json.Marshal(AsText(x))
	}
	return json.Marshal(x)
}

// UnmarshalJSON reads what MarshalJSON writes: a number, or "NaN", "+Inf" or "-Inf" (null
// leaves n as it is, as for a float64).
func (n *Number) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || !math.IsNaN(x) && !math.IsInf(x, 0) {
			return fmt.Errorf("want a number, NaN, +Inf or -Inf, not %s", data)
		}
		*n = Number(x)
		return nil
	}
	x := float64(*n)
	if err := json.Unmarshal(data, &x); err != nil {
		return err
	}
	*n = Number(x)
	return nil
}
