package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// The load benchmark: loadClients clients at once, each sending requests one after another
// for loadPhase or loadPerClient requests, whichever comes first. In the "users" model each
// client reads a page, then waits a second (a person reading, htmx polling); in the
// "saturation" model it sends the next request as soon as the last one is answered.
const (
	loadClients   = 200
	loadPhase     = 10 * time.Second
	loadPerClient = 2_000
	loadThink     = time.Second
	loadDemoRows  = 200_000
)

// loadPage is a page or API route a team has open while a backfill runs. ledger pages are
// built from the ledger (and the server's memory) alone; the others read the warehouse's
// catalog too (views, row counts, a plan's input checks).
type loadPage struct {
	path   string
	ledger bool
}

var loadPages = []loadPage{
	{"/", false},
	{"/backfills", true},
	{"/backfills/fix_dedup_bug", false},
	{"/notices", true},
	{"/tables/orders", false},
	{"/rules", true},
	{"/audit", true},
	{"/api/v1/backfills", true},
	{"/api/v1/backfills/history", true},
	{"/api/v1/tables/orders", false},
	{"/api/v1/rules", true},
	{"/api/v1/notices", true},
}

// benchLoad serves the demo project with the real `trueup serve` binary on loopback and sends
// it the review pages and JSON API from 200 clients, first with nothing else running (the
// baseline), then while the demo backfill rebuilds orders and its downstream tables, in both
// load models. It prints p50/p99 latency and errors, per page and overall, and the ratio of
// busy to baseline. Target: zero errors, p99 < 100 ms for the pages built from the ledger.
func benchLoad(ctx context.Context, b *env) error {
	rows := min(b.rows, loadDemoRows)
	dir := filepath.Join(b.dir, "load")
	bin := filepath.Join(dir, "trueup")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "trueup/cmd/trueup").CombinedOutput(); err != nil {
		return fmt.Errorf("build trueup: %v: %s", err, out)
	}
	project := filepath.Join(dir, "demo")
	if out, err := exec.CommandContext(ctx, bin, "demo", "--dir", project, "--rows", fmt.Sprint(rows), "--write-only").CombinedOutput(); err != nil {
		return fmt.Errorf("trueup demo: %v: %s", err, out)
	}
	// One partition at a time with a pause after each, so the run lasts longer than a phase.
	bf := filepath.Join(project, "backfills", "fix_dedup_bug.sql")
	src, err := os.ReadFile(bf)
	if err != nil {
		return err
	}
	slow := strings.Replace(string(src), "-- concurrency: 2\n", "-- concurrency: 1\n-- throttle: 2s\n", 1)
	if err := os.WriteFile(bf, []byte(slow), 0o644); err != nil {
		return err
	}

	addr, err := freeLoopback()
	if err != nil {
		return err
	}
	base := "http://" + addr
	var logs bytes.Buffer
	srv := exec.Command(bin, "--config", filepath.Join(project, "trueup.yaml"), "serve", "--addr", addr)
	srv.Stdout, srv.Stderr = &logs, &logs
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() {
		srv.Process.Signal(os.Interrupt)
		srv.Wait()
	}()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: loadClients * 2, MaxIdleConnsPerHost: loadClients * 2, IdleConnTimeout: time.Minute}}
	if err := waitReady(ctx, client, base); err != nil {
		return fmt.Errorf("%w; server log:\n%s", err, logs.String())
	}
	for _, p := range loadPages { // warm: first loads parse templates, open caches
		if _, err := loadGet(ctx, client, base+p.path); err != nil {
			return fmt.Errorf("warm-up %s: %w", p.path, err)
		}
	}

	fmt.Printf("demo project: %d orders; %d clients for %s per phase over %d pages and API routes (ledger pages: built from the ledger alone)\n",
		rows, loadClients, loadPhase, len(loadPages))
	models := []struct {
		name  string
		think time.Duration
	}{{"users", loadThink}, {"saturation", 0}}
	idle := map[string]*loadStats{}
	for _, m := range models {
		idle[m.name] = loadRun(ctx, client, base, m.think)
		idle[m.name].print(m.name + ", no backfill (baseline)")
	}

	if err := loadPost(ctx, client, base+"/api/v1/backfills/fix_dedup_bug/run", http.StatusAccepted); err != nil {
		return fmt.Errorf("start the backfill: %w", err)
	}
	first, err := backfillState(ctx, client, base)
	if err != nil {
		return err
	}
	busy := map[string]*loadStats{}
	for _, m := range models {
		busy[m.name] = loadRun(ctx, client, base, m.think)
		busy[m.name].print(m.name + ", while the backfill runs")
	}
	last, err := backfillState(ctx, client, base)
	if err != nil {
		return err
	}
	fmt.Printf("backfill during the busy phases: %s %d/%d partitions → %s %d/%d partitions\n",
		first.State, first.PartitionsDone, first.PartitionsTotal, last.State, last.PartitionsDone, last.PartitionsTotal)
	if last.State == "running" {
		loadPost(ctx, client, base+"/api/v1/backfills/fix_dedup_bug/cancel", http.StatusAccepted)
	}
	errs := 0
	for _, m := range models {
		i, b := idle[m.name], busy[m.name]
		errs += i.errors + b.errors
		fmt.Printf("load %-11s backfill/baseline: p50 %5.2fx  p99 %5.2fx   ledger pages p99 %6.1f ms (baseline %6.1f ms)   all pages p99 %6.1f ms   errors %d\n",
			m.name, loadRatio(b.pct(50), i.pct(50)), loadRatio(b.pct(99), i.pct(99)),
			ms(b.group(true, 99)), ms(i.group(true, 99)), ms(b.pct(99)), i.errors+b.errors)
	}
	u := busy["users"]
	verdict := "met"
	if errs > 0 || u.group(true, 99) >= 100*time.Millisecond {
		verdict = "NOT met"
	}
	fmt.Printf("target (zero errors, p99 < 100 ms for ledger pages, users model, backfill running): %s\n", verdict)
	if last.State != "running" && last.PartitionsDone == first.PartitionsDone {
		return fmt.Errorf("the backfill was not running during the load phases (%s)", last.State)
	}
	if errs > 0 {
		var firsts []string
		for _, m := range models {
			firsts = append(firsts, idle[m.name].firstErr, busy[m.name].firstErr)
		}
		return fmt.Errorf("%d requests failed; first: %s", errs, cmp.Or(firsts...))
	}
	return nil
}

// loadStats are the latencies and failures of one phase, overall and per page.
type loadStats struct {
	took     time.Duration
	all      []time.Duration
	byPage   map[string][]time.Duration
	errors   int
	firstErr string
}

func (s *loadStats) pct(p float64) time.Duration { return loadPercentile(s.all, p) }

// group is the percentile p of the ledger pages (or of the others).
func (s *loadStats) group(ledger bool, p float64) time.Duration {
	var d []time.Duration
	for _, lp := range loadPages {
		if lp.ledger == ledger {
			d = append(d, s.byPage[lp.path]...)
		}
	}
	return loadPercentile(d, p)
}

func (s *loadStats) print(phase string) {
	fmt.Printf("load: %-38s %6d requests in %4.1fs (%5.0f/s)   p50 %6.1f ms   p99 %6.1f ms   max %7.1f ms   errors %d\n",
		phase, len(s.all), s.took.Seconds(), float64(len(s.all))/s.took.Seconds(),
		ms(s.pct(50)), ms(s.pct(99)), ms(s.pct(100)), s.errors)
	for _, p := range loadPages {
		d := s.byPage[p.path]
		kind := "engine"
		if p.ledger {
			kind = "ledger"
		}
		fmt.Printf("        %-36s %s %6d   p50 %6.1f ms   p99 %6.1f ms\n", p.path, kind, len(d),
			ms(loadPercentile(d, 50)), ms(loadPercentile(d, 99)))
	}
}

// loadRun sends the pages from loadClients clients, each going round the pages from its own
// starting point and waiting think between requests, until loadPhase is over or it has sent
// loadPerClient requests. Clients start spread over the first think (or 100 ms).
func loadRun(ctx context.Context, client *http.Client, base string, think time.Duration) *loadStats {
	var mu sync.Mutex
	s := &loadStats{byPage: map[string][]time.Duration{}}
	start := time.Now()
	deadline := start.Add(loadPhase)
	spread := max(think, 100*time.Millisecond)
	var wg sync.WaitGroup
	for c := range loadClients {
		wg.Go(func() {
			time.Sleep(spread * time.Duration(c) / loadClients)
			var mine []time.Duration
			pages := map[string][]time.Duration{}
			errs, first := 0, ""
			for i := 0; i < loadPerClient && time.Now().Before(deadline); i++ {
				p := loadPages[(c+i)%len(loadPages)].path
				t0 := time.Now()
				_, err := loadGet(ctx, client, base+p)
				d := time.Since(t0)
				if err != nil {
					errs++
					if first == "" {
						first = p + ": " + err.Error()
					}
				} else {
					mine = append(mine, d)
					pages[p] = append(pages[p], d)
				}
				if think > 0 {
					time.Sleep(think)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			s.all = append(s.all, mine...)
			for p, d := range pages {
				s.byPage[p] = append(s.byPage[p], d...)
			}
			s.errors += errs
			if s.firstErr == "" {
				s.firstErr = first
			}
		})
	}
	wg.Wait()
	s.took = time.Since(start)
	return s
}

// loadGet GETs u and reads the whole answer; anything but 200 is an error.
func loadGet(ctx context.Context, client *http.Client, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %.200s", resp.StatusCode, body)
	}
	return body, nil
}

func loadPost(ctx context.Context, client *http.Client, u string, want int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("POST %s: status %d: %s", u, resp.StatusCode, body)
	}
	return nil
}

type runState struct {
	State           string `json:"state"`
	PartitionsDone  int    `json:"partitions_done"`
	PartitionsTotal int    `json:"partitions_total"`
}

func backfillState(ctx context.Context, client *http.Client, base string) (runState, error) {
	var st runState
	body, err := loadGet(ctx, client, base+"/api/v1/backfills/fix_dedup_bug/status")
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(body, &st)
}

func waitReady(ctx context.Context, client *http.Client, base string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := loadGet(ctx, client, base+"/readyz"); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("trueup serve did not become ready: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func freeLoopback() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func loadPercentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

// ms is in bench_views.go.

func loadRatio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
