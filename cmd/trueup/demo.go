package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"trueup/fixtures"
	"trueup/rules"
	tsql "trueup/sql"
)

func runDemo(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	dir := fs.String("dir", "trueup-demo", "folder to write the demo project into")
	rows := fs.Int("rows", 200_000, "orders in the demo warehouse")
	seed := fs.Int64("seed", 1, "seed of the deterministic generator")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	writeOnly := fs.Bool("write-only", false, "write the project and warehouse, then exit")
	fresh := fs.Bool("fresh", false, "rebuild the demo even if the folder already holds one")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if *rows < 1000 {
		return usagef("demo: --rows %d: need at least 1000", *rows)
	}
	target := e.globals.target
	if target != "" && !strings.HasPrefix(target, "clickhouse://") && !strings.HasPrefix(target, "duckdb:") {
		return usagef("demo: --target %q: want a URL (clickhouse://host:port/db or duckdb:PATH)", target)
	}
	cfgPath := filepath.Join(*dir, "trueup.yaml")
	opt := fixtures.Options{Rows: *rows, Seed: *seed}
	wrote := false
	if _, err := os.Stat(cfgPath); err == nil && !*fresh {
		fmt.Fprintf(e.stderr, "demo: using the existing project in %s (--fresh rebuilds it)\n", *dir)
	} else {
		if err := writeDemo(ctx, *dir, target, opt, *fresh); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "demo: wrote %s (%d orders, seed %d)\n", *dir, *rows, *seed)
		wrote = true
	}
	if *writeOnly {
		if wrote {
			return checkDemo(ctx, e, cfgPath)
		}
		return nil
	}
	// Served, the demo's data ends now: the orders since it was written (or last served) arrive
	// first, and then one minute's at a time while it serves.
	loaded, err := demoCatchUp(ctx, e, cfgPath, opt)
	if err != nil {
		return err
	}
	if wrote || loaded > 0 {
		if err := checkDemo(ctx, e, cfgPath); err != nil {
			return err
		}
	}
	e.globals.config = cfgPath
	e.globals.target = ""
	return listenAndServe(ctx, e, *addr, func(ctx context.Context, a *app) error {
		d, err := newDemoPipeline(ctx, a, opt, slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
		if err != nil {
			return err
		}
		go d.every(ctx, e.stderr)
		return nil
	})
}

// demoCatchUp loads the orders that arrived since the demo's data ends, up to now.
func demoCatchUp(ctx context.Context, e *env, cfgPath string, opt fixtures.Options) (int, error) {
	a, err := openApp(ctx, globals{config: cfgPath})
	if err != nil {
		return 0, err
	}
	defer a.Close()
	d, err := newDemoPipeline(ctx, a, opt, slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return 0, err
	}
	n, err := d.load(ctx)
	if err != nil {
		return 0, err
	}
	if n > 0 {
		fmt.Fprintf(e.stderr, "demo: the pipeline loaded %d orders that arrived up to %s; it loads each minute's while the demo runs\n", n, d.now().UTC().Format("2006-01-02 15:04"))
	}
	return n, nil
}

// checkDemo runs the demo's rules once, so the dashboard opens on what they found: the totals
// rule failing on the nine days of the planted bug.
func checkDemo(ctx context.Context, e *env, cfgPath string) error {
	a, err := openApp(ctx, globals{config: cfgPath})
	if err != nil {
		return err
	}
	defer a.Close()
	targets := rules.TargetMap{Default: a.Config.DefaultTarget, Engines: a.Targets}
	set, err := loadRules(ctx, e, a.Config.ProjectDir("rules"), targets)
	if err != nil {
		return err
	}
	store := rules.NewStore(a.Ledger)
	run := rules.NewRunner(targets, rules.WithSchemaStore(store), rules.WithAcceptSchema(true)).Run(ctx, set.Rules)
	run.Trigger = "demo"
	if _, err := store.SaveRun(ctx, run, "demo"); err != nil {
		return err
	}
	pass, fail, errs := run.Counts()
	warned := run.Warned() // a warning, as check prints it, not a failure
	fmt.Fprintf(e.stderr, "demo: checked %d rules: %d pass, %d fail, %d warn, %d could not run\n", len(run.Results), pass, fail-warned, warned, errs)
	for _, r := range run.Results {
		switch {
		case r.Failed() && len(r.FailingPartitions) > 0:
			fmt.Fprintf(e.stderr, "demo:   %s (%s) fails on %d %s: %s\n", r.Rule, r.Severity, len(r.FailingPartitions),
				pluralWord(len(r.FailingPartitions), "partition", "partitions"), abbreviate(r.FailingPartitions, 9))
		case r.Failed():
			fmt.Fprintf(e.stderr, "demo:   %s (%s) fails: %s\n", r.Rule, r.Severity, r.Message)
		}
	}
	return nil
}

// writeDemo builds the project in a temporary sibling folder and renames it into place, so a
// failure or an interrupt never leaves a half-written demo behind.
func writeDemo(ctx context.Context, dir, target string, opt fixtures.Options, fresh bool) error {
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return usagef("demo: %v", err)
	}
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return usagef("demo: %s exists and is not a folder", dir)
		}
		if !fresh {
			if ents, _ := os.ReadDir(dir); len(ents) > 0 {
				return usagef("demo: %s is not empty and holds no trueup.yaml (choose another --dir)", dir)
			}
		}
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return usagef("demo: %v", err)
	}
	defer os.RemoveAll(tmp)

	url := target
	projectURL := target
	if url == "" {
		url = "duckdb:" + filepath.Join(tmp, "warehouse.duckdb")
		projectURL = "duckdb:warehouse.duckdb"
	}
	eng, err := tsql.Create(ctx, url)
	if err != nil {
		return usagef("demo: %v", err)
	}
	defer eng.Close()
	if err := prepareDemoTarget(ctx, eng, fresh); err != nil {
		return err
	}
	if err := fixtures.Warehouse(ctx, eng, opt); err != nil {
		fixtures.Drop(context.WithoutCancel(ctx), eng) // leave no half-built warehouse behind
		return fmt.Errorf("demo: build warehouse in %s: %w", url, err)
	}
	if err := fixtures.WriteProject(tmp, projectURL); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	eng.Close()
	if fresh {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	} else {
		os.Remove(dir) // an empty folder may be there
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}

// prepareDemoTarget refuses to write over a target that already has tables, unless asked to
// rebuild: then the demo's own relations are dropped first.
func prepareDemoTarget(ctx context.Context, e tsql.Engine, fresh bool) error {
	rels, err := e.Relations(ctx)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if len(rels) == 0 {
		return nil
	}
	if !fresh {
		return usagef("demo: target %s already has %d relations (use --fresh to replace the demo's tables, or an empty database)", e.Info().Target, len(rels))
	}
	return fixtures.Drop(ctx, e)
}
