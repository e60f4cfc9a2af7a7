package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"trueup/config"
	"trueup/fault"
)

const authBase = "targets:\n  w:\n    url: duckdb:x.duckdb\n"

func TestAuth(t *testing.T) {
	ann, bob := config.HashToken("ann-secret"), config.HashToken("bob-secret")
	body := authBase + "auth:\n  four_eyes: true\n  tokens:\n" +
		"    - {name: ann, role: approver, sha256: " + strings.ToUpper(ann) + "}\n" +
		"    - name: bob@example.com\n      role: viewer\n      sha256: " + bob + "\n"
	c, err := config.Parse("trueup.yaml", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, tok := range c.Auth.Tokens {
		got = append(got, tok.Name+" "+tok.Role+" "+tok.SHA256)
	}
	want := []string{"ann approver " + ann, "bob@example.com viewer " + bob}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tokens (-want +got):\n%s", diff)
	}
	if !c.Auth.FourEyes {
		t.Error("four_eyes not read")
	}
	if h := config.HashToken("x"); h != "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881" {
		t.Errorf("HashToken(x) = %q, want the hex SHA-256 that sha256sum prints", h)
	}
}

func TestAuthErrors(t *testing.T) {
	h := config.HashToken("x")
	for _, tc := range []struct {
		name, body, want string
	}{
		{"bad_role", "auth:\n  tokens:\n    - name: ann\n      role: admin\n      sha256: " + h + "\n",
			`trueup.yaml:7: auth token "ann": role "admin": want viewer, operator, approver`},
		{"missing_role", "auth:\n  tokens:\n    - name: ann\n      sha256: " + h + "\n",
			`trueup.yaml:6: auth token "ann": missing role`},
		{"plain_token_not_hash", "auth:\n  tokens:\n    - name: ann\n      role: viewer\n      sha256: hunter2\n",
			`trueup.yaml:8: auth token "ann": sha256 must be 64 hex digits`},
		{"hash_not_hex", "auth:\n  tokens:\n    - name: ann\n      role: viewer\n      sha256: " + strings.Repeat("z", 64) + "\n",
			`trueup.yaml:8: auth token "ann": sha256 must be 64 hex digits`},
		{"missing_hash", "auth:\n  tokens:\n    - name: ann\n      role: viewer\n",
			`trueup.yaml:6: auth token "ann": missing sha256`},
		{"missing_name", "auth:\n  tokens:\n    - role: viewer\n      sha256: " + h + "\n",
			`trueup.yaml:6: auth token: missing name`},
		{"name_with_spaces", "auth:\n  tokens:\n    - name: ann smith\n      role: viewer\n      sha256: " + h + "\n",
			`trueup.yaml:6: auth token name "ann smith": use letters`},
		{"reserved_name", "auth:\n  tokens:\n    - name: local-operator\n      role: viewer\n      sha256: " + h + "\n",
			`trueup.yaml:6: auth token name "local-operator" is reserved`},
		{"duplicate_name", "auth:\n  tokens:\n    - {name: ann, role: viewer, sha256: " + h + "}\n    - {name: ann, role: approver, sha256: " + config.HashToken("y") + "}\n",
			`trueup.yaml:7: auth token "ann": the name is used twice`},
		{"duplicate_hash", "auth:\n  tokens:\n    - {name: ann, role: viewer, sha256: " + h + "}\n    - {name: bob, role: approver, sha256: " + h + "}\n",
			`trueup.yaml:7: auth token "bob": same sha256 as token "ann"`},
		{"unknown_key", "auth:\n  tokens:\n    - {name: ann, role: viewer, sha256: " + h + ", token: x}\n",
			`trueup.yaml:6: field token not found in token`},
		{"unknown_section_key", "auth:\n  four_eye: true\n",
			`trueup.yaml:5: field four_eye not found in auth`},
		{"four_eyes_without_tokens", "auth:\n  four_eyes: true\n",
			`trueup.yaml:5: auth.four_eyes needs tokens`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("trueup.yaml", []byte(authBase+tc.body))
			if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}
