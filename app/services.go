package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"trueup/backfill"
	"trueup/config"
	"trueup/monitor"
	"trueup/notices"
	"trueup/reconcile"
	"trueup/rules"
	"trueup/views"
)

// The services of a project are built here, once, for every face alike: a CLI command builds
// the ones it needs, serve builds them all. What a file of the project says wrong comes back as
// the load's error (*rules.LoadError, sqlfile.Problems), each problem at its path:line, for the
// face to show; nothing here prints.

// RuleTargets are the engines rules run on: chosen (the CLI's --target, a name or a URL opened
// with OpenTarget) is the default one, else the config's.
func (p *Project) RuleTargets(chosen string) rules.TargetMap {
	t := rules.TargetMap{Default: p.Config.DefaultTarget, Engines: p.Targets}
	if chosen != "" {
		t.Default = chosen
	}
	return t
}

// HasDir reports whether the project has the folder name (rules, backfills, exposures).
func (p *Project) HasDir(name string) bool {
	st, err := os.Stat(p.Config.ProjectDir(name))
	return err == nil && st.IsDir()
}

// LoadRules loads and validates the rule set in dir against targets, naming its files as they
// are shown from the working directory.
func LoadRules(ctx context.Context, dir string, targets rules.Targets) (*rules.Set, error) {
	return rules.Load(ctx, os.DirFS(dir), Shown(dir), targets)
}

// Rules is the project's rule set, loaded and validated; nil for a project without a rules
// folder.
func (p *Project) Rules(ctx context.Context, targets rules.Targets) (*rules.Set, error) {
	if !p.HasDir("rules") {
		return nil, nil
	}
	return LoadRules(ctx, p.Config.ProjectDir("rules"), targets)
}

// Shown is how a project path is shown in messages: relative to the working directory when it
// is below it.
func Shown(dir string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, dir); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel)
		}
	}
	return dir
}

// Channels turns trueup.yaml's notify section into the channels notices sends through. The
// config has checked every value (addresses, URLs, the webhook each subscription names);
// notices takes them as they are.
func Channels(n config.Notify) notices.Channels {
	ch := notices.Channels{
		PublicURL: n.PublicURL,
		Email: notices.Email{
			SMTP:     n.Email.SMTP,
			From:     n.Email.From,
			Username: n.Email.Username,
			Password: n.Email.Password,
			StartTLS: n.Email.StartTLS,
		},
	}
	if n.Webhooks != nil {
		ch.Webhooks = make(map[string]notices.Webhook, len(n.Webhooks))
		for name, w := range n.Webhooks {
			ch.Webhooks[name] = notices.Webhook{URL: w.URL, Secret: w.Secret, Kind: w.Kind, LegacySignature: w.LegacySignature}
		}
	}
	for _, s := range n.Subscriptions {
		ch.Subscriptions = append(ch.Subscriptions, notices.Subscription{Table: s.Table, Exposure: s.Exposure, Webhook: s.Webhook, Email: s.Email})
	}
	return ch
}

// Outbox is the project's notices outbox: what is queued for subscribers, sent through the
// configured channels.
func (p *Project) Outbox(log *slog.Logger) *notices.Outbox {
	return notices.NewOutbox(p.Ledger, Channels(p.Config.Notify), notices.OutboxOptions{Logger: log})
}

// Notices is the project's notice service: its channels, its outbox and its exposures, loaded
// and checked against targets (a project without an exposures folder has none).
func (p *Project) Notices(ctx context.Context, targets rules.Targets, log *slog.Logger) (*notices.Service, error) {
	var xs []*notices.Exposure
	if p.HasDir("exposures") {
		dir := p.Config.ProjectDir("exposures")
		var err error
		if xs, err = notices.LoadExposures(os.DirFS(dir), Shown(dir)); err != nil {
			return nil, err
		}
		if err := notices.CheckExposures(ctx, xs, targets); err != nil {
			return nil, err
		}
	}
	return notices.New(p.Ledger, notices.Options{Channels: Channels(p.Config.Notify), Outbox: p.Outbox(log), Exposures: xs, Targets: targets,
		KnowsTable: views.Store{L: p.Ledger}.Keeps}), nil
}

// Monitor is the monitor of a rule set on the project's ledger, serve's and check's alike:
// every alert its runs raise, and any recorded earlier and not handed on yet, goes to the
// subscribers of the rule's table through ob (RouteAlerts, the one routing of alerts). target is
// where runner runs the rules without a target: of their own (check --target), and so where
// their tables' old versions are checked too.
func (p *Project) Monitor(set []*rules.Rule, runner *rules.Runner, target string, store *rules.Store, ob *notices.Outbox, log *slog.Logger, opts ...monitor.Option) *monitor.Monitor {
	var mon *monitor.Monitor
	send := RouteAlerts(ob, p.Config.Notify.PublicURL, func(name string) (*rules.Rule, error) { return mon.Rule(name) })
	opts = append([]monitor.Option{monitor.WithLogger(log), monitor.WithAlerts(send), monitor.WithBuiltIn(KindWrittenAfterLive)}, opts...)
	if target == "" {
		target = p.Config.DefaultTarget
	}
	mon = monitor.New(set, staleChecked{Runner: runner, p: p, target: target, all: func() []*rules.Rule { return mon.Rules() }}, store, monitor.NewLedgerSlots(p.Ledger), opts...)
	return mon
}

// RouteAlerts is where rule alerts go, whatever raised them (a schedule, the run-now button,
// the API, `trueup check`): to the notices outbox, addressed to the subscribers of the table of
// the alert's rule (rule looks it up; a rule no longer known has none), linking to the rule's
// page under publicURL. It is the one routing of alerts: every monitor hands its alerts on
// through it (monitor.WithAlerts).
func RouteAlerts(ob *notices.Outbox, publicURL string, rule func(name string) (*rules.Rule, error)) func(context.Context, rules.Alert) error {
	tableOf := func(name string) string {
		if r, err := rule(name); err == nil && r != nil {
			return r.Table
		}
		return ""
	}
	return notices.AlertSender(ob, publicURL, tableOf)
}

// ServedMonitor is the monitor serve runs: the project's rules on targets, its schema
// snapshots kept, its alerts handed to ob.
func (p *Project) ServedMonitor(ctx context.Context, targets rules.TargetMap, ob *notices.Outbox, log *slog.Logger) (*monitor.Monitor, error) {
	set, err := p.Rules(ctx, targets)
	if err != nil {
		return nil, err
	}
	var rs []*rules.Rule
	if set != nil {
		rs = set.Rules
	}
	store := rules.NewStore(p.Ledger)
	return p.Monitor(rs, rules.NewRunner(targets, rules.WithSchemaStore(store)), targets.Default, store, ob, log), nil
}

// ViewsOptions are what a views service of the project is told besides the config.
type ViewsOptions struct {
	Logger  *slog.Logger
	Notices *notices.Service // told of publishes, when not nil
	// Rules, when not nil, reruns the rules of the tables a swap or rollback moved, in the
	// background (serve's monitor): the dashboard does not go on showing the fixed rule failing.
	Rules *monitor.Monitor
	Hooks views.Hooks
}

// Views is the views service of one target: the config's retention, o's listener and hooks.
func (p *Project) Views(target string, o ViewsOptions) *views.Service {
	opts := []views.Option{views.WithLogger(o.Logger), views.WithRetention(p.Config.Retention.KeepVersions, p.Config.Retention.Auto),
		views.WithHooks(o.Hooks)}
	var ls listeners
	if o.Notices != nil {
		ls = append(ls, o.Notices)
	}
	if o.Rules != nil {
		ls = append(ls, &rerun{mon: o.Rules, log: o.Logger, wg: &p.background, ctx: p.bgCtx})
	}
	if len(ls) > 0 {
		opts = append(opts, views.WithListener(ls))
	}
	return views.New(target, p.Targets[target], p.Ledger, opts...)
}

// ReloadBackfills loads the project's backfill files and rules again, checked as BackfillRunner
// checks them, for a serving process to hand to its backfills (backfill.Service.Reload).
func (p *Project) ReloadBackfills(ctx context.Context, target string) (*backfill.Set, *rules.Set, error) {
	set, err := p.loadBackfills()
	if err != nil {
		return nil, nil, err
	}
	rs, err := p.validationRules(ctx, p.Name(target), set)
	return set, rs, err
}

func (p *Project) loadBackfills() (*backfill.Set, error) {
	dir := p.Config.ProjectDir("backfills")
	return backfill.Load(os.DirFS(dir), Shown(dir))
}

// validationRules are the rules the validations of set's runs on target run (nil: the project
// has none), once every validate: name of set is found among them.
func (p *Project) validationRules(ctx context.Context, target string, set *backfill.Set) (*rules.Set, error) {
	rs, err := p.Rules(ctx, rules.TargetMap{Default: target, Engines: p.Targets})
	if err != nil {
		return nil, err
	}
	if err := set.CheckValidate(rs); err != nil {
		return nil, err
	}
	return rs, nil
}

// RecoveredViews is the views service of each named target, recovered as start-up must before
// anything is served: the ledger and the views agree, whatever a crash left behind. The
// services come back with what was repaired even when some intent could not be settled (its
// table keeps its lock rows, so swapping it is refused until a later start-up settles it).
func (p *Project) RecoveredViews(ctx context.Context, targets []string, o ViewsOptions) (map[string]*views.Service, []views.Repair, error) {
	out := make(map[string]*views.Service, len(targets))
	all := make([]*views.Service, 0, len(targets))
	for _, name := range targets {
		s := p.Views(name, o)
		out[name] = s
		all = append(all, s)
	}
	repairs, err := views.Recover(ctx, all...)
	return out, repairs, err
}

// BackfillRunner loads the project's backfills and rules and builds the runner of target's
// backfills: validation by the rules and the diffs, a change notice drafted from each run when
// ntc is not nil (DraftNotices, after opts).
func (p *Project) BackfillRunner(ctx context.Context, target string, ntc *notices.Service, log *slog.Logger, opts ...backfill.Option) (*backfill.Runner, error) {
	set, err := p.loadBackfills()
	if err != nil {
		return nil, err
	}
	target = p.Name(target)
	eng, err := p.Engine(target)
	if err != nil {
		return nil, err
	}
	rs, err := p.validationRules(ctx, target, set)
	if err != nil {
		return nil, err
	}
	v := backfill.Validator{Diffs: reconcile.NewStore(p.Ledger)}
	if rs != nil {
		v.Rules, v.Runner = rs, rules.NewRunner(rules.TargetMap{Default: target, Engines: p.Targets})
	}
	if ntc != nil {
		opts = append(opts, DraftNotices(v, ntc, log))
	}
	return backfill.NewRunner(backfill.Planner{Set: set, Engine: eng, Target: target, Rules: v, FullRewriteRows: p.Config.Backfill.FullRewriteRows},
		backfill.Store{L: p.Ledger}, v, opts...), nil
}
