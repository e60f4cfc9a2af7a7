package page

// The write routes whose buttons the pages show, by the pattern the server registers them
// under and its authorization table names. A page asks Visitor.May(RouteSwap) before it offers
// the button; which role each needs is the server's to say, never the page's.
const (
	RouteSwap               = "POST /tables/:table/swap"
	RouteRollback           = "POST /tables/:table/rollback"
	RouteAdopt              = "POST /tables/:table/adopt"
	RouteCatchUp            = "POST /tables/:table/catch-up"
	RouteRetire             = "POST /tables/:table/retire"
	RouteRuleRun            = "POST /rules/:rule/run"
	RouteBackfillDryRun     = "POST /backfills/:name/dry-run"
	RouteBackfillRun        = "POST /backfills/:name/run"
	RouteBackfillResume     = "POST /backfills/:name/resume"
	RouteBackfillCancel     = "POST /backfills/:name/cancel"
	RouteNoticeEdit         = "POST /notices/:id/edit"
	RouteNoticeAnnounce     = "POST /notices/:id/announce"
	RouteNoticeWithdraw     = "POST /notices/:id/withdraw"
	RouteSubscriptionRemove = "POST /subscriptions/:id/remove"
)

// Routes lists every Route constant: the server's tests check that its authorization table
// names each one.
var Routes = []string{
	RouteSwap, RouteRollback, RouteAdopt, RouteCatchUp, RouteRetire, RouteRuleRun,
	RouteBackfillDryRun, RouteBackfillRun, RouteBackfillResume, RouteBackfillCancel,
	RouteNoticeEdit, RouteNoticeAnnounce, RouteNoticeWithdraw, RouteSubscriptionRemove,
}
