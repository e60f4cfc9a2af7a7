package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"flag"
	"fmt"
	"slices"
	"strings"

	"trueup/config"
)

// runToken makes a new API token: the token itself, to hand to its owner, and the line for
// trueup.yaml, which holds only its SHA-256.
func runToken(_ context.Context, e *env, fs *flag.FlagSet, args []string) error {
	name := fs.String("name", "", "who the token is for: the actor the audit log records")
	role := fs.String("role", config.RoleViewer, "viewer, operator or approver")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if *name == "" {
		return usagef("token: --name is required (the actor the audit log records)")
	}
	if !slices.Contains(config.Roles(), *role) {
		return usagef("token: --role %q: want %s", *role, strings.Join(config.Roles(), ", "))
	}
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	token := "tu_" + base64.RawURLEncoding.EncodeToString(b)
	line := fmt.Sprintf("    - {name: %s, role: %s, sha256: %s}", *name, *role, config.HashToken(token))
	// The config line is checked as trueup.yaml would be, so a bad name fails here, not at serve.
	if _, err := config.Parse("token", []byte("targets: {w: {url: 'duckdb::memory:'}}\nauth:\n  tokens:\n"+line+"\n")); err != nil {
		return usagef("token: %w", err)
	}
	fmt.Fprintf(e.stdout, "%s\n", token)
	fmt.Fprintf(e.stderr, "Give the token above to %s; it is shown only once. Add this under auth.tokens in trueup.yaml:\n%s\n", *name, line)
	return nil
}
