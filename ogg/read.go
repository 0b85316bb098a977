package ogg

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Stream is what Read found in an Ogg Opus stream.
type Stream struct {
	Channels  int
	InputRate int
	PreSkip   int
	// Packets are the audio packets in order (within the input, unless a
	// packet spans pages).
	Packets [][]byte
	// Samples is the packets' duration in 48 kHz samples, which the last
	// page's granule position equals (pre-skip included).
	Samples int64
}

// Read checks and parses an Ogg Opus stream of one logical stream, as a
// transcription server would: every page's capture pattern, version,
// checksum and sequence number; the first page alone flagged beginning of
// stream and holding the OpusHead, the comment header (OpusTags) next, the
// last page flagged end of stream; each audio packet's framing
// (OpusSamples); and each page's granule position equal to the samples
// of the packets ending on it and before (-1 on a page where none ends).
func Read(b []byte) (*Stream, error) {
	s := &Stream{}
	var (
		serial  uint32
		packet  []byte // the packet being gathered, across pages
		open    bool   // packet continues on the next page
		n       int    // packets so far, headers included
		samples int64
		eos     bool
	)
	for seq := uint32(0); len(b) > 0; seq++ {
		if eos {
			return nil, errors.New("ogg: data after the end of stream")
		}
		if len(b) < headerSize || !bytes.Equal(b[:4], []byte("OggS")) || b[4] != 0 {
			return nil, fmt.Errorf("ogg: page %d: no Ogg page header", seq)
		}
		nsegs := int(b[26])
		if len(b) < headerSize+nsegs {
			return nil, fmt.Errorf("ogg: page %d: truncated segment table", seq)
		}
		size := headerSize + nsegs
		for _, l := range b[headerSize : headerSize+nsegs] {
			size += int(l)
		}
		if len(b) < size {
			return nil, fmt.Errorf("ogg: page %d: truncated (%d of %d bytes)", seq, len(b), size)
		}
		page := bytes.Clone(b[:size])
		binary.LittleEndian.PutUint32(page[22:], 0)
		if got, want := binary.LittleEndian.Uint32(b[22:]), checksum(page); got != want {
			return nil, fmt.Errorf("ogg: page %d: checksum %08x, want %08x", seq, got, want)
		}
		flags := b[5]
		granule := int64(binary.LittleEndian.Uint64(b[6:]))
		if seq == 0 {
			serial = binary.LittleEndian.Uint32(b[14:])
		}
		switch {
		case binary.LittleEndian.Uint32(b[14:]) != serial:
			return nil, fmt.Errorf("ogg: page %d: a second logical stream", seq)
		case binary.LittleEndian.Uint32(b[18:]) != seq:
			return nil, fmt.Errorf("ogg: page %d: sequence number %d", seq, binary.LittleEndian.Uint32(b[18:]))
		case (flags&flagBOS != 0) != (seq == 0):
			return nil, fmt.Errorf("ogg: page %d: beginning-of-stream flag %v", seq, flags&flagBOS != 0)
		case (flags&flagContinued != 0) != open:
			return nil, fmt.Errorf("ogg: page %d: continued flag %v", seq, flags&flagContinued != 0)
		}
		eos = flags&flagEOS != 0
		data := b[headerSize+nsegs : size]
		ended := false
		for _, l := range b[headerSize : headerSize+nsegs] {
			packet = append(packet, data[:l]...)
			data = data[l:]
			open = l == 255
			if open {
				continue
			}
			d, err := s.packet(n, packet)
			if err != nil {
				return nil, err
			}
			samples += int64(d)
			n++
			packet, ended = nil, true
		}
		if n <= 2 && ended && granule != 0 {
			return nil, fmt.Errorf("ogg: page %d: a header page's granule position is %d", seq, granule)
		}
		want := int64(-1)
		if ended {
			want = samples + int64(s.PreSkip)
		}
		if n > 2 && granule != want {
			return nil, fmt.Errorf("ogg: page %d: granule position %d, want %d", seq, granule, want)
		}
		b = b[size:]
	}
	switch {
	case n < 2:
		return nil, errors.New("ogg: no OpusHead and OpusTags")
	case !eos:
		return nil, errors.New("ogg: the last page is not flagged end of stream")
	case open:
		return nil, errors.New("ogg: the last packet is not finished")
	}
	s.Samples = samples + int64(s.PreSkip)
	return s, nil
}

// packet takes the stream's packet number i and returns its duration in
// 48 kHz samples (0 for the headers).
func (s *Stream) packet(i int, p []byte) (int, error) {
	switch i {
	case 0:
		if len(p) < 19 || !bytes.Equal(p[:8], []byte("OpusHead")) || p[8]>>4 != 0 {
			return 0, errors.New("ogg: the first packet is not an OpusHead")
		}
		s.Channels, s.PreSkip = int(p[9]), int(binary.LittleEndian.Uint16(p[10:]))
		s.InputRate = int(binary.LittleEndian.Uint32(p[12:]))
		if s.Channels < 1 || p[18] != 0 && p[18] != 1 {
			return 0, errors.New("ogg: an OpusHead with no channels or an unknown channel mapping")
		}
		if p[18] == 0 && s.Channels > 2 {
			return 0, errors.New("ogg: an OpusHead of mapping family 0 with more than two channels")
		}
		return 0, nil
	case 1:
		if len(p) < 16 || !bytes.Equal(p[:8], []byte("OpusTags")) {
			return 0, errors.New("ogg: the second packet is not an OpusTags")
		}
		return 0, nil
	}
	d, err := OpusSamples(p)
	if err != nil {
		return 0, fmt.Errorf("ogg: audio packet %d: %w", i-2, err)
	}
	s.Packets = append(s.Packets, p)
	return d, nil
}
