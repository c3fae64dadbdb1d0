package models

import (
	"net/mail"
	"strings"
)

// emailField is the request field every e-mail error names.
const emailField = "customer_email"

// Limits from RFC 5321: a forward path is at most 256 octets including the
// angle brackets, and a local part at most 64 octets.
const (
	maxEmailLen      = 254
	maxEmailLocalLen = 64
	maxDomainLen     = 253
	maxLabelLen      = 63
)

// ValidateEmail checks the customer's e-mail address and returns it trimmed
// with the domain lower-cased. The local part keeps its case: RFC 5321 lets
// the receiving server treat it as case-sensitive.
//
// It accepts only what a receipt can be delivered to through an ordinary
// mail provider, which is narrower than RFC 5322:
//   - a bare address: no display name, angle brackets or comments, which
//     belong in headers, not in a field holding one address;
//   - a dot-atom local part of ASCII characters: quoted local parts and
//     non-ASCII ones (which need SMTPUTF8 end to end) are rejected, because
//     a bounce after payment is worse than a clear error at order creation;
//   - a DNS host name with at least one dot: letters, digits and hyphens,
//     internationalised names in their punycode (xn--) form, and a top-level
//     label that is alphabetic or punycode; IP-literal domains are rejected.
//
// Errors are *Error with CodeInvalidEmail and Field "customer_email"; their
// messages never repeat the input, which is personal data.
func ValidateEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", emailError("customer_email is required")
	}
	if len(s) > maxEmailLen {
		return "", emailError("customer_email must be at most %d characters", maxEmailLen)
	}
	// net/mail is the RFC 5322 parser; requiring its result to be the
	// input unchanged rejects display names, angle brackets, comments and
	// folding whitespace, which it would otherwise strip silently.
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Name != "" || addr.Address != s {
		return "", emailError("customer_email must be a single bare address like name@example.com, without a display name or angle brackets")
	}
	at := strings.LastIndexByte(s, '@')
	local, domain := s[:at], s[at+1:]
	if err := checkLocalPart(local); err != nil {
		return "", err
	}
	if err := checkEmailDomain(domain); err != nil {
		return "", err
	}
	return local + "@" + strings.ToLower(domain), nil
}

func emailError(format string, args ...any) *Error {
	return FieldError(CodeInvalidEmail, emailField, format, args...)
}

// emailAtext is RFC 5322 atext: the characters of a dot-atom besides dots.
const emailAtext = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-/=?^_`{|}~"

func checkLocalPart(local string) error {
	if len(local) > maxEmailLocalLen {
		return emailError("the part of customer_email before @ must be at most %d characters", maxEmailLocalLen)
	}
	// net/mail has already rejected leading, trailing and doubled dots in
	// an unquoted local part, but a quoted one can hold anything, so the
	// character check here is what rules quoting out.
	if local == "" || local[0] == '.' || local[len(local)-1] == '.' || strings.Contains(local, "..") {
		return emailError("the part of customer_email before @ must not start or end with a dot or contain two dots in a row")
	}
	for i := 0; i < len(local); i++ {
		if local[i] != '.' && strings.IndexByte(emailAtext, local[i]) < 0 {
			return emailError("the part of customer_email before @ may contain only ASCII letters, digits, dots and !#$%%&'*+-/=?^_`{|}~")
		}
	}
	return nil
}

func checkEmailDomain(domain string) error {
	// The label rules also rule out IP literals ("[192.0.2.1]"), and the
	// top-level rule bare IP addresses.
	invalid := emailError("customer_email must have a domain name like example.com: labels of letters, digits and hyphens separated by dots")
	if len(domain) > maxDomainLen {
		return invalid
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return invalid
	}
	for _, label := range labels {
		if !emailDomainLabel(label) {
			return invalid
		}
	}
	if !emailTopLevelLabel(labels[len(labels)-1]) {
		return emailError("customer_email must end in a top-level domain of letters, like .com")
	}
	return nil
}

// emailDomainLabel reports whether label is a DNS host-name label: 1 to 63
// letters, digits and hyphens, not starting or ending with a hyphen.
func emailDomainLabel(label string) bool {
	if len(label) == 0 || len(label) > maxLabelLen || label[0] == '-' || label[len(label)-1] == '-' {
		return false
	}
	for i := 0; i < len(label); i++ {
		c := label[i]
		if !isHostLetter(c) && !isHostDigit(c) && c != '-' {
			return false
		}
	}
	return true
}

// emailTopLevelLabel reports whether an LDH label can be a top-level domain:
// all letters (at least two), or an internationalised TLD in punycode. An
// all-digit last label is what makes "user@192.168.0.1" a non-host name.
func emailTopLevelLabel(label string) bool {
	if len(label) > 4 && strings.EqualFold(label[:4], "xn--") {
		return true
	}
	if len(label) < 2 {
		return false
	}
	for i := 0; i < len(label); i++ {
		if !isHostLetter(label[i]) {
			return false
		}
	}
	return true
}

func isHostLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isHostDigit(c byte) bool  { return c >= '0' && c <= '9' }
