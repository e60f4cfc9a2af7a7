package sql_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"trueup/fault"

	tsql "trueup/sql"
	"trueup/sql/sqltest"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ name, url, want string }{
		{"duckdb_path", "duckdb:data/w.duckdb", "duckdb:data/w.duckdb"},
		{"duckdb_memory", "duckdb::memory:", "duckdb::memory:"},
		{"no_credentials_kept_as_given", "clickhouse://h:9000/db?dial_timeout=1s&compress=lz4", "clickhouse://h:9000/db?dial_timeout=1s&compress=lz4"},
		{"user_and_password", "clickhouse://ann:s3cret@h:9000/db", "clickhouse://h:9000/db"},
		{"user_only", "clickhouse://default:@h:9000/db", "clickhouse://h:9000/db"},
		{"password_with_at", "clickhouse://ann:s3@cret@h:9000/db", "clickhouse://h:9000/db"},
		{"query_credentials", "clickhouse://h:9000/db?username=ann&password=s3cret&dial_timeout=1s", "clickhouse://h:9000/db?dial_timeout=1s"},
		{"query_key_any_case", "clickhouse://h:9000/db?PassWord=s3cret", "clickhouse://h:9000/db"},
		{"query_key_escaped", "clickhouse://h:9000/db?pass%77ord=s3cret&x=1", "clickhouse://h:9000/db?x=1"},
		{"proxy_credentials", "clickhouse://h:9000/db?http_proxy=http%3A%2F%2Fp%3As3cret%40proxy%3A3128", "clickhouse://h:9000/db?http_proxy=http%3A%2F%2Fproxy%3A3128"},
		{"bad_port", "clickhouse://ann:s3cret@h:nope/db", "clickhouse://h:nope/db"},
		{"slash_in_password", "clickhouse://ann:s3/cret@h:9000/db", "clickhouse://h:9000/db"},
		{"bad_port_query_password", "clickhouse://h:nope/db?password=s3cret&x=1", "clickhouse://h:nope/db?x=1"},
		{"unknown_scheme", "postgres://ann:s3cret@h/db", "postgres://h/db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tsql.Redact(tc.url); got != tc.want {
				t.Errorf("Redact(%q) = %q, want %q", tc.url, got, tc.want)
			}
		})
	}
}

// An engine opened with credentials in its URL names its target without them, and still tells
// itself apart (Key) from an engine on the same server under other credentials.
func TestInfoTargetHasNoCredentials(t *testing.T) {
	ctx := context.Background()
	duck := sqltest.DuckDBURL(t)
	e := sqltest.Open(t, duck)
	if got := e.Info().Target; got != duck {
		t.Errorf("duckdb Target %q, want the URL as given %q", got, duck)
	}
	url := sqltest.ClickHouseURL(t)
	if url == "" {
		return
	}
	// the test server's user "default" has an empty password: the only one it accepts
	withUser := strings.Replace(url, "://", "://default:@", 1) + "?username=default&password=&dial_timeout=5s"
	plain, err := tsql.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	creds, err := tsql.Open(ctx, withUser)
	if err != nil {
		t.Fatal(err)
	}
	defer creds.Close()
	want := url + "?dial_timeout=5s"
	if got := creds.Info().Target; got != want {
		t.Errorf("Target %q, want %q", got, want)
	}
	if plain.Info().Target != url {
		t.Errorf("Target %q, want the URL as given %q", plain.Info().Target, url)
	}
	again := sqltest.Open(t, url)
	if plain.Info().Key != again.Info().Key || plain.Info().Key == creds.Info().Key || strings.Contains(creds.Info().Key, "default") {
		t.Errorf("keys: %q, same URL %q, with credentials %q", plain.Info().Key, again.Info().Key, creds.Info().Key)
	}
}

// An open error names the target without its password, whichever engine and whichever step
// failed, and keeps its kind.
func TestOpenErrorHasNoPassword(t *testing.T) {
	ctx := context.Background()
	const secret = "s3cret-Xq9"
	cases := []struct {
		name, url, shows string
		is               error
	}{
		{"unreachable", "clickhouse://ann:" + secret + "@127.0.0.1:1/db", "clickhouse://127.0.0.1:1/db", tsql.ErrUnreachable},
		{"query_password", "clickhouse://127.0.0.1:1/db?username=ann&password=" + secret + "&dial_timeout=1s", "clickhouse://127.0.0.1:1/db?dial_timeout=1s", tsql.ErrUnreachable},
		{"bad_port", "clickhouse://ann:" + secret + "@127.0.0.1:nope/db", "clickhouse://127.0.0.1:nope/db", fault.ErrInvalid},
		{"slash_in_password", "clickhouse://ann:" + secret + "/x@127.0.0.1:1/db", "clickhouse://127.0.0.1:1/db", fault.ErrInvalid},
		{"unknown_scheme", "postgres://ann:" + secret + "@127.0.0.1/db", "postgres://127.0.0.1/db", fault.ErrInvalid},
		{"duckdb_options", "duckdb:" + filepath.Join(t.TempDir(), "w.duckdb") + "?password=" + secret, "w.duckdb", fault.ErrInvalid},
	}
	if url := sqltest.ClickHouseURL(t); url != "" {
		// a real server refusing the password, or a database it does not have: it answered, so
		// the target is not unreachable but wrong, as given
		wrong := strings.Replace(url, "://", "://default:"+secret+"@", 1)
		noDB := url[:strings.LastIndexByte(url, '/')+1] + "no_such_db"
		cases = append(cases, struct {
			name, url, shows string
			is               error
		}{"refused_password", wrong, url, fault.ErrInvalid}, struct {
			name, url, shows string
			is               error
		}{"no_such_database", noDB, "the server refused the connection: code: 81", fault.ErrInvalid})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := tsql.Open(ctx, tc.url)
			if err == nil {
				e.Close()
				t.Fatalf("%s opened", tsql.Redact(tc.url))
			}
			if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), tc.shows) {
				t.Errorf("error %q: shows the password, or not %q", err, tc.shows)
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("error %q lost its kind (want %v)", err, tc.is)
			}
			if tc.is != tsql.ErrUnreachable && errors.Is(err, tsql.ErrUnreachable) {
				t.Errorf("error %q calls a server that answered unreachable", err)
			}
		})
	}
}
