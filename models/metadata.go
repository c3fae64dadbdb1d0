package models

import (
	"slices"
	"unicode"
	"unicode/utf8"
)

// Metadata limits, as Stripe's: enough for a client's own ids and a few
// notes, small enough to store and return with every cart and order.
const (
	MaxMetadataKeys     = 20
	MaxMetadataKeyLen   = 40  // characters (Unicode code points)
	MaxMetadataValueLen = 500 // characters
)

// ValidateMetadata checks a client's metadata as given in a request: at
// most MaxMetadataKeys keys, each 1 to MaxMetadataKeyLen characters with no
// control characters, each value at most MaxMetadataValueLen characters.
// An empty value is allowed: it means "no such key" (MergeMetadata). Errors
// are invalid_request naming the field: "metadata" or "metadata.<key>".
// Keys are checked in sorted order, so the same request always gets the
// same error.
func ValidateMetadata(m map[string]string) error {
	if len(m) > MaxMetadataKeys {
		return FieldError(CodeInvalidRequest, "metadata", "metadata holds %d keys; at most %d are allowed", len(m), MaxMetadataKeys)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field := "metadata." + k
		switch n := utf8.RuneCountInString(k); {
		case n == 0:
			return FieldError(CodeInvalidRequest, "metadata", "metadata keys must not be empty")
		case n > MaxMetadataKeyLen:
			return FieldError(CodeInvalidRequest, field, "metadata keys are at most %d characters; this one has %d", MaxMetadataKeyLen, n)
		}
		for _, r := range k {
			if unicode.IsControl(r) {
				return FieldError(CodeInvalidRequest, field, "metadata keys must not contain control characters")
			}
		}
		if n := utf8.RuneCountInString(m[k]); n > MaxMetadataValueLen {
			return FieldError(CodeInvalidRequest, field, "%s is %d characters; metadata values are at most %d", field, n, MaxMetadataValueLen)
		}
	}
	return nil
}

// MergeMetadata returns base with over applied, as an order's metadata is
// made from its cart's: a key of over replaces base's, a key given with an
// empty value removes it, keys only in base are kept. Empty values are
// never kept. The result may hold at most MaxMetadataKeys keys; nil when
// it holds none. Both maps are left unchanged.
func MergeMetadata(base, over map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		if v != "" {
			out[k] = v
		}
	}
	for k, v := range over {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	if len(out) > MaxMetadataKeys {
		return nil, FieldError(CodeInvalidRequest, "metadata",
			"metadata merged over the cart's would hold %d keys; at most %d are allowed (remove a cart key with an empty value)", len(out), MaxMetadataKeys)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
