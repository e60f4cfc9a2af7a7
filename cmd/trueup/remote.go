package main

import (
	"os"

	"trueup/ops/client"
)

// remote is a running trueup a command goes through (--server URL): its JSON API under
// /api/v1/ (ops/client), with the API token of --token or TRUEUP_TOKEN.
type remote struct {
	*client.Client
}

// remote returns the server the command goes through, or nil when it runs locally. A URL that
// is not http(s)://host[:port] is bad usage.
func (e *env) remote() (*remote, error) {
	raw := e.globals.server
	if raw == "" {
		return nil, nil
	}
	tok := e.globals.token
	if tok == "" {
		tok = os.Getenv("TRUEUP_TOKEN")
	}
	// Without tokens on the server, the audit log of a swap names the CLI's user as a local
	// command would; with tokens the server records the token's name instead.
	c, err := client.New(raw, tok, cliActor())
	if err != nil {
		return nil, err
	}
	return &remote{c}, nil
}

// localOnly refuses, with --server, flags that only the local command has.
func (e *env) localOnly(cmd string, set map[string]bool) error {
	if e.globals.server == "" {
		return nil
	}
	for flag, on := range set {
		if on {
			return usagef("%s: --%s works only locally, not with --server", cmd, flag)
		}
	}
	return nil
}
