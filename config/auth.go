package config

// Auth configures who may do what. With no tokens trueup listens on loopback only.
type Auth struct {
	Tokens []Token `yaml:"tokens"`
	// FourEyes forbids an approver to approve their own backfill.
	FourEyes bool `yaml:"four_eyes"`
}

// Token is one API token, stored hashed.
type Token struct {
	Name string `yaml:"name"` // the actor recorded in the audit log
	Role string `yaml:"role"` // viewer, operator or approver
	// SHA256 is the hex SHA-256 of the token.
	SHA256 string `yaml:"sha256"`
}

func (a *Auth) validate(bad func(key, format string, args ...any) error) error { return nil }
