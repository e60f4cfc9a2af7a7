package main

import (
	"strings"
	"testing"

	"trueup/config"
)

func TestTokenCommand(t *testing.T) {
	code, out, errs := cli(t, "token", "--name", "ann", "--role", "approver")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	token := strings.TrimSpace(out)
	if !strings.HasPrefix(token, "tu_") || len(token) < 40 {
		t.Fatalf("token %q", token)
	}
	line := "{name: ann, role: approver, sha256: " + config.HashToken(token) + "}"
	if !strings.Contains(errs, line) || strings.Contains(errs, token) {
		t.Errorf("stderr should hold the config line and not the token:\n%s", errs)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"token", "--role", "viewer"}, "--name is required"},
		{[]string{"token", "--name", "ann", "--role", "admin"}, `--role "admin": want viewer, operator, approver`},
		{[]string{"token", "--name", "ann smith"}, `name "ann smith": use letters`},
	} {
		if code, _, errs := cli(t, tc.args...); code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%q: exit %d: %s", tc.args, code, errs)
		}
	}
}
