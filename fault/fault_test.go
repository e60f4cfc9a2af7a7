package fault_test

import (
	"errors"
	"fmt"
	"testing"

	"trueup/fault"
)

type custom struct{}

func (custom) Error() string        { return "custom" }
func (custom) Is(target error) bool { return errors.Is(pkgConflict, target) }

var pkgConflict = fault.Named(fault.Conflict, "backfill already running")

func TestKinds(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		kind fault.Kind
		msg  string
	}{
		{"new", fault.New(fault.NotFound, "there is no rule %q", "fresh"), fault.NotFound, `there is no rule "fresh"`},
		{"wrapped_new", fmt.Errorf("rules: load: %w", fault.New(fault.Invalid, "bad header")), fault.Invalid, "bad header"},
		{"named", fmt.Errorf("backfill: orders: %w", pkgConflict), fault.Conflict, "backfill: orders: backfill already running"},
		{"custom_is", fmt.Errorf("x: %w", custom{}), fault.Conflict, "x: custom"},
		{"joined", errors.Join(errors.New("a"), fault.New(fault.Failed, "b")), fault.Failed, "a\nb"},
		{"marked", fault.Mark(fault.Refused, errors.New("gate said no")), fault.Refused, "gate said no"},
		{"plain", errors.New("disk full"), fault.None, "disk full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if k := fault.Of(tc.err); k != tc.kind {
				t.Errorf("kind %v, want %v", k, tc.kind)
			}
			if tc.kind != fault.None && !errors.Is(tc.err, tc.kind.Sentinel()) {
				t.Errorf("errors.Is(err, %v sentinel) is false", tc.kind)
			}
			if m := fault.Message(tc.err); m != tc.msg {
				t.Errorf("message %q, want %q", m, tc.msg)
			}
		})
	}
	if !errors.Is(fmt.Errorf("w: %w", pkgConflict), pkgConflict) {
		t.Error("a named sentinel is not itself")
	}
	for k := fault.NotFound; k <= fault.Failed; k++ {
		if fault.Parse(k.String()) != k {
			t.Errorf("Parse(%q) is not %v", k.String(), k)
		}
	}
}
