// Package ogg writes and reads Ogg Opus streams (RFC 7845) of one mono
// Opus stream: what an OpenAI-compatible transcription API takes as an
// "ogg" upload, so that the hub can hand on the device's Opus packets
// without decoding them. It also holds the Opus packet framing rules
// (RFC 6716 §3) the stream's granule positions are counted by, which
// check every packet a device sends (OpusSamples).
package ogg

import (
	"encoding/binary"
)

// Page layout (RFC 3533 §6): a 27-byte header, the segment table (one
// lacing value per segment, at most 255), then the segments.
const (
	headerSize  = 27
	maxSegments = 255
	// pageRoom is the room a page takes before its data while it is open:
	// its header and the largest segment table. Closing the page moves
	// the data back over the part of the table left unused.
	pageRoom = headerSize + maxSegments
)

// Header type flags.
const (
	flagContinued = 0x01
	flagBOS       = 0x02
	flagEOS       = 0x04
)

// Writer appends an Ogg Opus stream to a byte slice, page by page: the
// identification header (OpusHead), the comment header (OpusTags), then
// one Ogg packet per Opus packet. A page holds as many packets as its 255
// segments take, and is closed, its checksum written, when the next
// segment does not fit; Close closes the last one, flagged end of stream.
// The packets are copied once, into the slice, and moved once more by at
// most 255 bytes when their page closes.
type Writer struct {
	b       []byte
	serial  uint32
	seq     uint32
	granule int64 // 48 kHz samples of the packets written
	page    int   // the open page's start in b; -1 when none is open
	segs    int   // segments in the open page
	flags   byte  // the open page's flags
	ends    bool  // a packet ends on the open page
	packets int
}

// NewWriter starts a stream of mono Opus at inputRate (the rate the audio
// was captured at, for the OpusHead) with the given serial number,
// appending to b: it writes the two header pages.
func NewWriter(b []byte, serial uint32, inputRate int) *Writer {
	w := &Writer{b: b, serial: serial, page: -1}
	head := [19]byte{'O', 'p', 'u', 's', 'H', 'e', 'a', 'd', 1, 1} // version 1, one channel
	// Pre-skip 0: the encoder's is not known. Output gain 0, mapping family 0.
	binary.LittleEndian.PutUint32(head[12:], uint32(inputRate))
	w.header(head[:], flagBOS)
	w.header([]byte("OpusTags\x0a\x00\x00\x00xiaozhi-hub\x00\x00\x00\x00"), 0)
	return w
}

// header writes a header packet on a page of its own (RFC 7845 §3).
func (w *Writer) header(p []byte, flags byte) {
	w.open(flags)
	w.add(p)
	w.ends = true
	w.closePage(0)
}

// WritePacket appends one Opus packet; its duration is read from its TOC
// (OpusSamples), and a packet whose framing is invalid is refused with
// ErrPacket.
func (w *Writer) WritePacket(p []byte) error {
	n, err := OpusSamples(p)
	if err != nil {
		return err
	}
	w.add(p)
	w.granule += int64(n) // after add: a page it closes ends before p
	w.ends = true
	w.packets++
	return nil
}

// Packets is how many audio packets were written.
func (w *Writer) Packets() int { return w.packets }

// Samples is the duration of the packets written, in 48 kHz samples.
func (w *Writer) Samples() int64 { return w.granule }

// Close closes the last page, flagged end of stream, and returns the
// slice: what was given to NewWriter, then the stream. Nothing may be
// written after it.
func (w *Writer) Close() []byte {
	if w.page < 0 {
		w.open(0) // no audio: an empty last page ends the stream
	}
	w.flags |= flagEOS
	w.closePage(w.granule)
	return w.b
}

// add appends a packet's segments, continuing it on a new page when the
// open one is full.
func (w *Writer) add(p []byte) {
	for {
		if w.page < 0 {
			w.open(0)
		} else if w.segs == maxSegments {
			w.closePage(w.granule)
			w.open(0)
		}
		n := min(len(p), 255)
		w.b[w.page+headerSize+w.segs] = byte(n)
		w.segs++
		w.b = append(w.b, p[:n]...)
		p = p[n:]
		if n < 255 {
			return // a lacing value below 255 ends the packet
		}
		if len(p) == 0 {
			// A packet of a multiple of 255 bytes ends with a zero-length
			// segment.
			if w.segs == maxSegments {
				w.closePage(w.granule)
				w.open(0)
			}
			w.b[w.page+headerSize+w.segs] = 0
			w.segs++
			return
		}
		if w.segs == maxSegments {
			// The packet goes on on the next page: this one ends none
			// unless an earlier packet ended here.
			w.closePage(w.granule)
			w.open(flagContinued)
		}
	}
}

// open starts a page: room for its header and a full segment table.
func (w *Writer) open(flags byte) {
	w.page, w.segs, w.flags, w.ends = len(w.b), 0, flags, false
	w.b = append(w.b, make([]byte, pageRoom)...)
}

// closePage writes the open page's header and checksum; granule is the
// samples of the packets ending on it or before (-1 when none ends on
// it, RFC 3533 §6).
func (w *Writer) closePage(granule int64) {
	pg, data := w.page, w.page+pageRoom
	end := pg + headerSize + w.segs
	n := copy(w.b[end:], w.b[data:])
	w.b = w.b[:end+n]
	h := w.b[pg:]
	copy(h, "OggS")
	h[4] = 0 // version
	h[5] = w.flags
	if !w.ends {
		granule = -1
	}
	binary.LittleEndian.PutUint64(h[6:], uint64(granule))
	binary.LittleEndian.PutUint32(h[14:], w.serial)
	binary.LittleEndian.PutUint32(h[18:], w.seq)
	binary.LittleEndian.PutUint32(h[22:], 0)
	h[26] = byte(w.segs)
	binary.LittleEndian.PutUint32(h[22:], checksum(w.b[pg:]))
	w.seq++
	w.page = -1
}
