package api

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCarrierLink(t *testing.T) {
	tests := []struct {
		carrier, number, want string
	}{
		{"UPS", "1Z999AA10123456784", "https://www.ups.com/track?tracknum=1Z999AA10123456784"},
		{"United Parcel Service", "1Z9", "https://www.ups.com/track?tracknum=1Z9"},
		{"usps", "9400 1000 0000", "https://tools.usps.com/go/TrackConfirmAction?tLabels=9400+1000+0000"},
		{"Fed Ex", "4490", "https://www.fedex.com/fedextrack/?trknbr=4490"},
		{"DHL Express", "JD01&x=1", "https://www.dhl.com/global-en/home/tracking/tracking-express.html?tracking-id=JD01%26x%3D1"},
		{"Sandbox Express", "SBX1", ""},
		{"", "1Z9", ""},
		{"UPS", "  ", ""},
	}
	for _, tt := range tests {
		assert.Equalf(t, tt.want, carrierLink(tt.carrier, tt.number), "%q %q", tt.carrier, tt.number)
	}
}

func TestClientKey(t *testing.T) {
	tests := map[string]string{
		"203.0.113.7":          "ip:203.0.113.7",
		"::ffff:203.0.113.7":   "ip:203.0.113.7",
		"2001:db8:1:2::1":      "ip:2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::9": "ip:2001:db8:1:2::/64",
		"2001:db8:1:3::1":      "ip:2001:db8:1:3::/64",
		"":                     "ip:",
	}
	for in, want := range tests {
		assert.Equalf(t, want, clientKey(in), "%q", in)
	}
}

func TestTrackingExplorerLink(t *testing.T) {
	const hash = "3389e9f0f1a65f19736cacf544c2e825313e8447f569233bb8db39aa607c8889"
	tests := []struct {
		network, hash, want string
	}{
		{"pubnet", hash, "https://stellar.expert/explorer/public/tx/" + hash},
		{"testnet", hash, "https://stellar.expert/explorer/testnet/tx/" + hash},
		{"sandbox", hash, ""},
		{"", hash, ""},
		{"futurenet", hash, ""},
		{"pubnet", "", ""},
		{"pubnet", hash[:63], ""},
		{"pubnet", hash[:63] + "/", ""},
		{"pubnet", "../" + hash[3:], ""},
	}
	for _, tt := range tests {
		assert.Equalf(t, tt.want, explorerLink(tt.network, tt.hash), "%q %q", tt.network, tt.hash)
	}
}
