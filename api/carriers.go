package api

import (
	"net/url"
	"strings"
)

// carrierTracking maps a carrier, by its name folded to lower-case letters
// and digits, to the public tracking page of one of its parcels (%s is the
// query-escaped tracking number). The tracking page links only to these: a
// provider's own tracking_url may point anywhere, and a carrier we do not
// know (the sandbox's "Sandbox Express") is shown as text.
var carrierTracking = map[string]string{
	"ups":                       "https://www.ups.com/track?tracknum=%s",
	"unitedparcelservice":       "https://www.ups.com/track?tracknum=%s",
	"usps":                      "https://tools.usps.com/go/TrackConfirmAction?tLabels=%s",
	"uspostalservice":           "https://tools.usps.com/go/TrackConfirmAction?tLabels=%s",
	"unitedstatespostalservice": "https://tools.usps.com/go/TrackConfirmAction?tLabels=%s",
	"fedex":                     "https://www.fedex.com/fedextrack/?trknbr=%s",
	"federalexpress":            "https://www.fedex.com/fedextrack/?trknbr=%s",
	"dhl":                       "https://www.dhl.com/global-en/home/tracking/tracking-express.html?tracking-id=%s",
	"dhlexpress":                "https://www.dhl.com/global-en/home/tracking/tracking-express.html?tracking-id=%s",
}

// carrierLink returns the carrier's public tracking page for a tracking
// number, or "" when the carrier is unknown or there is no number.
func carrierLink(carrier, trackingNumber string) string {
	trackingNumber = strings.TrimSpace(trackingNumber)
	if trackingNumber == "" {
		return ""
	}
	u, ok := carrierTracking[foldCarrier(carrier)]
	if !ok {
		return ""
	}
	return strings.Replace(u, "%s", url.QueryEscape(trackingNumber), 1)
}

// foldCarrier keeps the lower-cased letters and digits of a carrier's name,
// so "FedEx", "Fed Ex" and "FEDEX" are one carrier.
func foldCarrier(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}
