package main

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"trueup/notices"
)

// noticePage is how many notices one list request asks for (the API's most).
const noticePage = 1000

// noticeRemote is `trueup notice VERB` through a server, printed as locally. The server's own
// worker delivers what a write queues; `notice deliver` asks it for a pass now.
func noticeRemote(ctx context.Context, e *env, rc *remote, verb string, id int64, f notices.Filter, reason string, plan time.Time, out noticeOutput) error {
	cmd := "notice " + verb
	path := "notices/" + strconv.FormatInt(id, 10)
	var n notices.JSON
	var err error
	if !plan.IsZero() { // edit, or announce after setting the plan, as locally
		body := map[string]string{"planned_swap": plan.Format(time.RFC3339)}
		if err := rc.call(ctx, cmd, http.MethodPost, path+"/edit", nil, body, &n); err != nil {
			return err
		}
	}
	switch verb {
	case "list":
		var all []notices.JSON
		for offset := 0; ; offset += noticePage {
			q := url.Values{"limit": {strconv.Itoa(noticePage)}, "offset": {strconv.Itoa(offset)}}
			if f.Table != "" {
				q.Set("table", f.Table)
			}
			if f.State != "" {
				q.Set("state", string(f.State))
			}
			var page []notices.JSON
			if err := rc.call(ctx, cmd, http.MethodGet, "notices", q, nil, &page); err != nil {
				return err
			}
			all = append(all, page...)
			if len(page) < noticePage {
				break
			}
		}
		if all == nil {
			all = []notices.JSON{}
		}
		return out.list(all)
	case "deliver":
		var rep notices.Report
		if err := rc.call(ctx, cmd, http.MethodPost, "notices/deliver", nil, nil, &rep); err != nil {
			return err
		}
		reportDeliveries(e, rep)
		return nil
	case "edit": // the plan was set above
	case "show":
		err = rc.call(ctx, cmd, http.MethodGet, path, nil, nil, &n)
	case "announce":
		err = rc.call(ctx, cmd, http.MethodPost, path+"/announce", nil, nil, &n)
	case "withdraw", "complete":
		err = rc.call(ctx, cmd, http.MethodPost, path+"/"+verb, nil, map[string]string{"reason": reason}, &n)
	}
	if err != nil {
		return err
	}
	return out.show(n)
}
