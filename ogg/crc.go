package ogg

// crcTable is Ogg's CRC-32 (RFC 3533 §6, "CRC checksum"): generator
// polynomial 0x04c11db7, not reflected, initial value 0, no final xor.
// (hash/crc32's tables are reflected: they compute another checksum.)
var crcTable = func() (t [256]uint32) {
	for i := range t {
		r := uint32(i) << 24
		for range 8 {
			if r&0x80000000 != 0 {
				r = r<<1 ^ 0x04c11db7
			} else {
				r <<= 1
			}
		}
		t[i] = r
	}
	return t
}()

// checksum is the CRC of a page, its checksum field zero.
func checksum(page []byte) uint32 {
	var crc uint32
	for _, b := range page {
		crc = crc<<8 ^ crcTable[byte(crc>>24)^b]
	}
	return crc
}
