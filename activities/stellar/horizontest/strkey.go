package horizontest

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
)

// AccountID returns a valid Stellar account id (a "G..." strkey with a
// correct checksum) derived from name, so tests get distinct, stable,
// well-formed addresses without key material.
func AccountID(name string) string {
	key := sha256.Sum256([]byte("horizontest account " + name))
	raw := make([]byte, 0, 35)
	raw = append(raw, 6<<3) // version byte of an ed25519 public key: "G"
	raw = append(raw, key[:]...)
	raw = binary.LittleEndian.AppendUint16(raw, crc16XModem(raw))
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(raw)
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
