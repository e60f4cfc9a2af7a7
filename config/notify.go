package config

// Notify configures how notices reach people.
type Notify struct {
	// PublicURL is the base of links in notices (e.g. https://trueup.example.com).
	PublicURL     string             `yaml:"public_url"`
	Webhooks      map[string]Webhook `yaml:"webhooks"`
	Email         Email              `yaml:"email"`
	Subscriptions []Subscription     `yaml:"subscriptions"`
}

// Webhook is a named HTTP receiver.
type Webhook struct {
	URL    string `yaml:"url"`
	Secret string `yaml:"secret"` // HMAC-SHA256 key for the signature header
}

// Email is the SMTP relay notices are sent through.
type Email struct {
	SMTP     string `yaml:"smtp"` // host:port
	From     string `yaml:"from"`
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	StartTLS bool   `yaml:"starttls"`
}

// Subscription sends notices about a logical table or an exposure to one channel.
type Subscription struct {
	Table    string `yaml:"table"`
	Exposure string `yaml:"exposure"`
	Webhook  string `yaml:"webhook"` // a name from webhooks
	Email    string `yaml:"email"`   // an address
}

func (n *Notify) validate(bad func(key, format string, args ...any) error) error { return nil }
