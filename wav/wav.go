// Package wav writes and reads 16-bit PCM WAV files: what speech
// recognition APIs take as an upload, and what test fixtures are.
package wav

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Encode returns a mono 16-bit WAV file of pcm at rate.
func Encode(pcm []int16, rate int) []byte {
	return AppendSamples(AppendHeader(make([]byte, 0, HeaderSize+2*len(pcm)), len(pcm), rate), pcm)
}

// HeaderSize is the size of the header AppendHeader writes.
const HeaderSize = 44

// AppendHeader appends the header of a mono 16-bit WAV file of samples at
// rate to b; the samples follow it (AppendSamples).
func AppendHeader(b []byte, samples, rate int) []byte {
	b = append(b, "RIFF"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(36+2*samples))
	b = append(b, "WAVEfmt "...)
	b = binary.LittleEndian.AppendUint32(b, 16)
	b = binary.LittleEndian.AppendUint16(b, 1) // PCM
	b = binary.LittleEndian.AppendUint16(b, 1) // mono
	b = binary.LittleEndian.AppendUint32(b, uint32(rate))
	b = binary.LittleEndian.AppendUint32(b, uint32(rate*2))
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, 16)
	b = append(b, "data"...)
	return binary.LittleEndian.AppendUint32(b, uint32(2*samples))
}

// AppendSamples appends pcm to b as a WAV file's samples (16-bit little
// endian).
func AppendSamples(b []byte, pcm []int16) []byte {
	for _, s := range pcm {
		b = binary.LittleEndian.AppendUint16(b, uint16(s))
	}
	return b
}

// Decode reads a mono or stereo 16-bit PCM WAV file (stereo is mixed down),
// returning the samples and the rate. It reads at most max samples.
func Decode(r io.Reader, max int) ([]int16, int, error) {
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil || string(hdr[0:4]) != "RIFF" || string(hdr[8:12]) != "WAVE" {
		return nil, 0, errors.New("wav: not a RIFF/WAVE file")
	}
	var rate, channels int
	for {
		var ch [8]byte
		if _, err := io.ReadFull(r, ch[:]); err != nil {
			return nil, 0, fmt.Errorf("wav: no data chunk: %w", err)
		}
		size := int64(binary.LittleEndian.Uint32(ch[4:]))
		switch string(ch[0:4]) {
		case "fmt ":
			var f [16]byte
			if size < 16 {
				return nil, 0, errors.New("wav: short fmt chunk")
			}
			if _, err := io.ReadFull(r, f[:]); err != nil {
				return nil, 0, err
			}
			if binary.LittleEndian.Uint16(f[0:]) != 1 || binary.LittleEndian.Uint16(f[14:]) != 16 {
				return nil, 0, errors.New("wav: only 16-bit PCM is supported")
			}
			channels, rate = int(binary.LittleEndian.Uint16(f[2:])), int(binary.LittleEndian.Uint32(f[4:]))
			if _, err := io.CopyN(io.Discard, r, size-16+size%2); err != nil {
				return nil, 0, err
			}
		case "data":
			if channels < 1 || channels > 2 || rate <= 0 {
				return nil, 0, errors.New("wav: data before a usable fmt chunk")
			}
			n := min(int(size)/2/channels, max)
			raw := make([]byte, n*2*channels)
			if _, err := io.ReadFull(r, raw); err != nil {
				return nil, 0, err
			}
			pcm := make([]int16, n)
			for i := range pcm {
				s := int(int16(binary.LittleEndian.Uint16(raw[2*channels*i:])))
				if channels == 2 {
					s = (s + int(int16(binary.LittleEndian.Uint16(raw[2*channels*i+2:])))) / 2
				}
				pcm[i] = int16(s)
			}
			return pcm, rate, nil
		default:
			if _, err := io.CopyN(io.Discard, r, size+size%2); err != nil {
				return nil, 0, err
			}
		}
	}
}
