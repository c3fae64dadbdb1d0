package models

import (
	"maps"
	"slices"
	"strings"
)

// Reconcile is the Bookkeeper over books held whole in b, handed over as
// sqlstore.ReadBooks hands over the database's: the tests' books.
func Reconcile(b Books) ([]Ledger, []Discrepancy) {
	k := NewBookkeeper()
	stored := map[string]bool{}
	for _, p := range b.Payments {
		stored[p.ID] = true
	}
	returning := map[string]Refund{}
	own := map[string][]Refund{}
	for _, r := range b.Refunds {
		switch {
		case r.Reason.ofOrder():
			own[r.OrderID] = append(own[r.OrderID], r)
		case stored[strings.TrimPrefix(r.Key, PaymentRefundKey(""))] && strings.HasPrefix(r.Key, PaymentRefundKey("")):
			returning[r.Key] = r
		default:
			k.StrayRefunds("", []Refund{r})
		}
	}
	credited := map[string][]BookPayment{}
	for _, p := range b.Payments {
		var r *Refund
		if x, ok := returning[PaymentRefundKey(p.ID)]; ok {
			r = &x
		}
		k.Payment(p, r)
		if p.Credited() {
			credited[p.OrderID] = append(credited[p.OrderID], p)
		}
	}
	for _, o := range b.Orders {
		k.Order(o, credited[o.ID], own[o.ID])
		delete(credited, o.ID)
		delete(own, o.ID)
	}
	for _, orderID := range slices.Sorted(maps.Keys(own)) {
		k.StrayRefunds(orderID, own[orderID])
	}
	for _, orderID := range slices.Sorted(maps.Keys(credited)) {
		for _, p := range credited[orderID] {
			k.StrayCredit(p)
		}
	}
	return k.Finish()
}
