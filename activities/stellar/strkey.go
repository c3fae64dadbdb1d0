package stellar

import (
	"encoding/base32"
	"encoding/binary"
)

// validAccountID reports whether s is a well-formed Stellar account id: a
// "G..." strkey whose checksum matches. Checking the checksum catches a
// mistyped receiving account or issuer at start, rather than after a
// customer's payment went unseen.
func validAccountID(s string) bool {
	if len(s) != 56 || s[0] != 'G' {
		return false
	}
	raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(s)
	if err != nil || len(raw) != 35 || raw[0] != 6<<3 {
		return false
	}
	return binary.LittleEndian.Uint16(raw[33:]) == crc16XModem(raw[:33])
}

// crc16XModem is the checksum strkeys carry.
func crc16XModem(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
