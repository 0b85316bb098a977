package registry

import (
	"context"
	"encoding/json"

	"github.com/xiaozhi-hub/hub"
)

// RecordCall puts a call that did not go to a device (a service's tool,
// package services) into the call history as the registry's own calls
// go: rec names the target in DeviceID (e.g. "service:calc"), its Kind,
// Tool, Caller, Started and DurationMs; RecordCall fills in the outcome,
// the summarized arguments and result (or error), who asked (the principal
// in ctx), numbers the record, stores it before returning and announces
// it as a call_finished event of home (who sees that home sees it). It is counted in the call metrics under
// rec.Kind.
func (r *Registry) RecordCall(ctx context.Context, rec hub.CallRecord, home string, args json.RawMessage, res hub.CallResult, err error) {
	rec.Outcome = hub.OutcomeOK
	switch {
	case err != nil:
		rec.Outcome = outcomeOf(err)
		rec.Result = hub.ErrorMessage(err)
	case res.IsError:
		rec.Outcome = hub.OutcomeToolError
		rec.Result = summarize(res.Content)
	default:
		rec.Result = summarize(res.Content)
	}
	rec.Arguments = summarize(args)
	by(&rec, hub.PrincipalFrom(ctx))
	r.opts.Metrics.Call(rec.Kind, rec.Outcome, rec.DurationMs/1000)
	r.opts.Metrics.CallBy(rec.Caller)
	r.finish(ctx, rec, home)
}
