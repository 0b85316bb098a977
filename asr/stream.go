package asr

import (
	"context"
	"encoding/binary"
	"time"
)

// stream is an utterance streamed to a WebSocket recognizer (FunASR,
// DashScope) as it is heard.
type stream struct {
	up      upstream
	timeout time.Duration // for the final text
	buf     []byte
	err     error // the first write error: the stream is broken
}

// upstream is a streaming recognizer's connection for one utterance. Its
// errors are EUNAVAILABLE and name the service.
type upstream interface {
	// writeAudio sends 16 kHz s16le PCM.
	writeAudio(ctx context.Context, pcm []byte) error
	// finish ends the audio and waits for the text.
	finish(ctx context.Context) (string, error)
	close()
}

// Write sends PCM (16 kHz mono) to the server.
func (s *stream) Write(pcm []int16) error {
	if s.err != nil {
		return s.err
	}
	s.buf = s.buf[:0]
	for _, v := range pcm {
		s.buf = binary.LittleEndian.AppendUint16(s.buf, uint16(v))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.err = s.up.writeAudio(ctx, s.buf)
	return s.err
}

// Finish ends the audio and returns the text.
func (s *stream) Finish(ctx context.Context) (string, error) {
	if s.err != nil {
		return "", s.err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.up.finish(ctx)
}

// Close releases the connection.
func (s *stream) Close() { s.up.close() }
