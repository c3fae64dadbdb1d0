package activities

import (
	"context"

	"github.com/memocart/memocart/models"
)

// The watch that writes the steps it finds, for Order runs from before
// watch-reports (workflows.changeWatchReports), which start each watch
// with WatchOrderInput.Written and take its writes as their own
// (Progress.Recorded). Delete this file, WatchOrderInput.Written,
// Progress.Recorded and Fulfilment.WatchWrote with that change's
// DefaultVersion path, once no such run is open (its comment has the
// query).

// watchWrites is WatchOrder for such a run, once the provider answered:
// it writes the news's steps on the run's behalf, and returns the last
// as Progress.Recorded.
func (a *Orders) watchWrites(ctx context.Context, in WatchOrderInput, o models.Order, snap models.Fulfilment, p models.Progress) (models.Progress, error) {
	// Steps a watch wrote that the workflow has not heard of: an attempt
	// lost after writing them (its result never reached the workflow), or
	// a watch dropped with its run. A check storing its snapshot since
	// clears WatchWrote, and the workflow knows what the check found.
	unheard := o.Fulfilment != nil && o.Fulfilment.WatchWrote &&
		models.Progress{Status: o.Status, Shipment: o.Shipment}.News(in.Written.Status, shipmentOf(in.Written))
	if !unheard && !p.News(o.Status, o.Shipment) {
		if err := a.recordSnapshot(ctx, in.OrderID, snap); err != nil {
			return models.Progress{}, err
		}
		return models.Progress{}, unchanged("no news from the buying provider (still "+string(p.Status)+")", p.NextCheck)
	}
	// From the order as stored, as News compares: steps the workflow has
	// written since this watch started are not written again.
	from := *in.Written
	from.Status, from.Shipment = o.Status, nil
	if o.Shipment != (models.Shipment{}) {
		s := o.Shipment
		from.Shipment = &s
	}
	ts := p.Transitions(from, a.clock())
	// Marked before the writes, and kept until the workflow hears of them.
	snap.WatchWrote = len(ts) > 0 || unheard
	if err := a.recordSnapshot(ctx, in.OrderID, snap); err != nil {
		return models.Progress{}, err
	}
	for i := range ts {
		if err := a.store.RecordTransition(ctx, in.OrderID, ts[i], a.clock()); err != nil {
			return models.Progress{}, temporalError(err)
		}
		p.Recorded = &ts[i]
	}
	if len(ts) > 0 {
		dispatchEvents(ctx, a.events, in.OrderID)
	} else if unheard && p.Status != models.OrderFailed { // all written already, by a lost attempt
		from.At = o.Steps[o.Status]
		p.Recorded = &from
	}
	return p, nil
}

// shipmentOf is t's shipment, zero when it has none.
func shipmentOf(t *models.Transition) models.Shipment {
	if t.Shipment == nil {
		return models.Shipment{}
	}
	return *t.Shipment
}
