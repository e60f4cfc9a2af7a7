package config

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Auth configures who may do what. With no tokens trueup listens on loopback only and every
// visitor is the local operator.
type Auth struct {
	Tokens []Token `yaml:"tokens"`
	// FourEyes forbids an approver to swap a version built by a backfill run they started.
	FourEyes bool `yaml:"four_eyes"`
}

// Roles, weakest first: each may do everything the ones before it may.
const (
	RoleViewer   = "viewer"   // read every page and the API
	RoleOperator = "operator" // run rules and backfills, draft notices
	RoleApprover = "approver" // swap, roll back, override, announce and withdraw notices
)

// Roles lists the roles, weakest first.
func Roles() []string { return []string{RoleViewer, RoleOperator, RoleApprover} }

// Token is one API token, stored hashed: the file never holds the token itself.
type Token struct {
	Name string `yaml:"name"` // the actor recorded in the audit log
	Role string `yaml:"role"` // viewer, operator or approver
	// SHA256 is the hex SHA-256 of the token, e.g. from `printf %s TOKEN | sha256sum`.
	SHA256 string `yaml:"sha256"`

	line int
}

// HashToken returns the hex SHA-256 of a token, as trueup.yaml stores it.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// reservedActor is who acts while no tokens are configured; a token may not pretend to be it.
const reservedActor = "local-operator"

// UnmarshalYAML decodes the section strictly, then checks what spans tokens: no name or hash
// twice, each reported at the line of the second one.
func (a *Auth) UnmarshalYAML(node *yaml.Node) error {
	if node.Tag == "!!null" {
		return nil
	}
	type plain Auth
	if err := decodeStrict(node, (*plain)(a), "auth", "tokens", "four_eyes"); err != nil {
		return err
	}
	names, hashes := map[string]bool{}, map[string]string{}
	for _, t := range a.Tokens {
		if names[t.Name] {
			return lineError(t.line, "auth token %q: the name is used twice (the audit log could not tell them apart)", t.Name)
		}
		names[t.Name] = true
		if other, ok := hashes[t.SHA256]; ok {
			return lineError(t.line, "auth token %q: same sha256 as token %q (one token, one name)", t.Name, other)
		}
		hashes[t.SHA256] = t.Name
	}
	if a.FourEyes && len(a.Tokens) == 0 {
		return lineError(valueLine(node, "four_eyes"), "auth.four_eyes needs tokens: without them every visitor is the same local operator")
	}
	return nil
}

// UnmarshalYAML decodes and checks one token at its own lines.
func (t *Token) UnmarshalYAML(node *yaml.Node) error {
	type plain Token
	if err := decodeStrict(node, (*plain)(t), "token", "name", "role", "sha256"); err != nil {
		return err
	}
	t.line = node.Line
	switch {
	case t.Name == "":
		return lineError(node.Line, "auth token: missing name (the actor the audit log records)")
	case !actorName(t.Name):
		return lineError(valueLine(node, "name"), "auth token name %q: use letters, digits and . _ @ - (at most 64)", t.Name)
	case t.Name == reservedActor:
		return lineError(valueLine(node, "name"), "auth token name %q is reserved for the server without tokens", t.Name)
	}
	switch t.Role {
	case RoleViewer, RoleOperator, RoleApprover:
	case "":
		return lineError(node.Line, "auth token %q: missing role (%s)", t.Name, strings.Join(Roles(), ", "))
	default:
		return lineError(valueLine(node, "role"), "auth token %q: role %q: want %s", t.Name, t.Role, strings.Join(Roles(), ", "))
	}
	sum := strings.ToLower(strings.TrimSpace(t.SHA256))
	if b, err := hex.DecodeString(sum); err != nil || len(b) != sha256.Size {
		if t.SHA256 == "" {
			return lineError(node.Line, "auth token %q: missing sha256 (the hex SHA-256 of the token, e.g. printf %%s TOKEN | sha256sum)", t.Name)
		}
		return lineError(valueLine(node, "sha256"), "auth token %q: sha256 must be 64 hex digits (the token's SHA-256, never the token itself)", t.Name)
	}
	t.SHA256 = sum
	return nil
}

func actorName(s string) bool {
	if len(s) > 64 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("._@-", r):
		default:
			return false
		}
	}
	return true
}

// validate has nothing left to check: UnmarshalYAML checked every value at its own line.
func (a *Auth) validate(func(key, format string, args ...any) error) error { return nil }
