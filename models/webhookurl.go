package models

import (
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// WebhookURLPolicy is what the URL of a webhook endpoint may be. The same
// policy is applied twice: to the URL when the endpoint is registered
// (CheckURL), and to every address the host resolves to when an event is
// delivered, right before connecting (CheckAddr), so a name that later
// resolves elsewhere (DNS rebinding) cannot aim a delivery at the
// service's own network.
type WebhookURLPolicy struct {
	// RequireHTTPS refuses http:// URLs.
	RequireHTTPS bool
	// AllowLoopback admits loopback hosts (localhost, 127.0.0.0/8, ::1),
	// so a developer can receive test events on their own machine. It
	// never admits any other internal address.
	AllowLoopback bool
}

// WebhookPolicyFor is the policy of a mode. Live endpoints are https only
// and never loopback. Test endpoints may use http, and loopback when the
// deployment allows it (testLoopback: a developer's machine, the test
// suites; a shared deployment whose test keys must not reach its own
// loopback services turns it off).
func WebhookPolicyFor(mode Mode, testLoopback bool) WebhookURLPolicy {
	if mode == ModeLive {
		return WebhookURLPolicy{RequireHTTPS: true}
	}
	return WebhookURLPolicy{AllowLoopback: testLoopback}
}

// MaxWebhookURLLength bounds an endpoint URL.
const MaxWebhookURLLength = 2048

func badWebhookURL(format string, args ...any) *Error {
	return FieldError(CodeInvalidWebhookURL, "url", format, args...)
}

// CheckURL validates an endpoint URL and returns it normalised (scheme and
// host in lower case). It refuses, with CodeInvalidWebhookURL:
//   - anything but an absolute http or https URL (https only under
//     RequireHTTPS), with a host, without user information (the
//     "https://good.example@10.0.0.1" trick), fragment, or characters a URL
//     does not hold unescaped (spaces, backslashes, non-ASCII);
//   - an IP address CheckAddr refuses, in any notation that reaches one:
//     IPv4-mapped IPv6, and numeric host names such as 2130706433,
//     0x7f000001, 0177.0.0.1 or 127.1, which some resolvers read as
//     addresses (refused outright: an address is written in dotted
//     decimal or in brackets);
//   - names that are internal by definition: single labels (resolved
//     through search domains), localhost and *.localhost unless loopback
//     is allowed, and the local, internal, localdomain, lan, home, corp,
//     intranet, private, invalid and arpa domains.
//
// A name is not resolved here: the addresses it resolves to are checked
// at every delivery instead, where it matters.
func (p WebhookURLPolicy) CheckURL(raw string) (string, error) {
	if raw == "" {
		return "", badWebhookURL("url is required")
	}
	if len(raw) > MaxWebhookURLLength {
		return "", badWebhookURL("url must be at most %d characters", MaxWebhookURLLength)
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= 0x20 || c >= 0x7f || c == '\\' {
			return "", badWebhookURL("url holds a character a URL cannot (space, control, backslash or non-ASCII): percent-encode it")
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", badWebhookURL("url is not a valid URL")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return "", badWebhookURL("url must start with https://")
	case u.Scheme == "http" && p.RequireHTTPS:
		return "", badWebhookURL("url must use https for live keys")
	case u.Opaque != "" || u.Host == "":
		return "", badWebhookURL("url must name a host")
	case u.User != nil:
		return "", badWebhookURL("url must not hold a user name or password")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "", badWebhookURL("url must not have a fragment (#...)")
	}
	if port := u.Port(); port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return "", badWebhookURL("url has an invalid port")
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return "", badWebhookURL("url has an empty port")
	}
	host := strings.ToLower(u.Hostname())
	if strings.HasPrefix(u.Host, "[") {
		// An IPv6 literal. A zone (fe80::1%eth0) names an interface of
		// the service's own machine.
		addr, err := netip.ParseAddr(host)
		if err != nil || addr.Zone() != "" || !addr.Is6() {
			return "", badWebhookURL("url has an invalid IPv6 address")
		}
		if err := p.CheckAddr(addr); err != nil {
			return "", err
		}
	} else if addr, err := netip.ParseAddr(host); err == nil {
		if err := p.CheckAddr(addr); err != nil {
			return "", err
		}
	} else if err := p.checkName(host); err != nil {
		return "", err
	}
	u.Host = strings.ToLower(u.Host)
	return u.String(), nil
}

// internalDomains are suffixes that never name a public host.
var internalDomains = []string{"local", "internal", "localdomain", "lan", "home", "corp", "intranet", "private", "invalid", "arpa"}

// checkName checks a host name (not an address literal).
func (p WebhookURLPolicy) checkName(host string) error {
	name := strings.TrimSuffix(host, ".")
	if name == "" || len(name) > 253 {
		return badWebhookURL("url has an invalid host name")
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if !validLabel(l) {
			return badWebhookURL("url has an invalid host name (letters, digits and hyphens between dots; internationalised names in their xn-- form)")
		}
	}
	last := labels[len(labels)-1]
	if numericLabel(last) {
		return badWebhookURL("url's host looks like an IP address in a non-standard notation; write addresses in dotted decimal")
	}
	if last == "localhost" {
		if p.AllowLoopback {
			return nil
		}
		return badWebhookURL("url must not point at localhost")
	}
	if len(labels) == 1 {
		return badWebhookURL("url's host must be a fully qualified domain name")
	}
	for _, d := range internalDomains {
		if last == d {
			return badWebhookURL("url must not point at an internal domain (.%s)", last)
		}
	}
	return nil
}

func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// numericLabel reports whether a top-level label is a number (decimal,
// octal or hex): no real top-level domain is, and resolvers that accept
// inet_aton's forms read such names as addresses.
func numericLabel(l string) bool {
	if strings.HasPrefix(l, "0x") {
		l = l[2:]
		for i := 0; i < len(l); i++ {
			if !(l[i] >= '0' && l[i] <= '9' || l[i] >= 'a' && l[i] <= 'f') {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

// forbiddenRange is an address range deliveries never go to.
type forbiddenRange struct {
	prefix netip.Prefix
	what   string
}

func ranges(what string, prefixes ...string) []forbiddenRange {
	out := make([]forbiddenRange, len(prefixes))
	for i, p := range prefixes {
		out[i] = forbiddenRange{prefix: netip.MustParsePrefix(p), what: what}
	}
	return out
}

// forbiddenRanges: the cloud metadata addresses first, for the clearer
// message; then every range that is not the public internet.
var forbiddenRanges = slices.Concat(
	ranges("a cloud metadata address", "169.254.169.254/32", "fd00:ec2::254/128", "100.100.100.200/32", "168.63.129.16/32", "192.0.0.192/32"),
	ranges("a loopback address", "127.0.0.0/8", "::1/128"),
	ranges("an unspecified address", "0.0.0.0/8", "::/128"),
	ranges("a private address", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"),
	ranges("a unique local address", "fc00::/7"),
	ranges("a shared (carrier-grade NAT) address", "100.64.0.0/10"),
	ranges("a link-local address", "169.254.0.0/16", "fe80::/10", "fec0::/10"),
	ranges("a multicast address", "224.0.0.0/4", "ff00::/8"),
	ranges("a reserved address", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "::/96", "100::/64", "2001::/23", "2001:db8::/32"),
	ranges("an address embedding IPv4 (NAT64, 6to4)", "64:ff9b::/96", "64:ff9b:1::/48", "2002::/16"),
)

// CheckAddr refuses, with CodeInvalidWebhookURL, every address that is not
// on the public internet: loopback (unless AllowLoopback), private
// (RFC 1918, RFC 4193), link-local, carrier-grade NAT, multicast,
// unspecified, reserved and documentation ranges, cloud metadata
// addresses, and IPv6 forms embedding IPv4 (IPv4-mapped addresses are
// judged as the IPv4 address they map).
func (p WebhookURLPolicy) CheckAddr(addr netip.Addr) error {
	if !addr.IsValid() {
		return badWebhookURL("url has an invalid address")
	}
	addr = addr.Unmap()
	if addr.Zone() != "" {
		return badWebhookURL("url must not name a network interface")
	}
	if addr.IsLoopback() && p.AllowLoopback {
		return nil
	}
	for _, r := range forbiddenRanges {
		if r.prefix.Contains(addr) {
			return badWebhookURL("url must not point at %s (%s is in %s)", r.what, addr, r.prefix)
		}
	}
	if !addr.IsGlobalUnicast() {
		return badWebhookURL("url must not point at %s, which is not a public address", addr)
	}
	return nil
}
