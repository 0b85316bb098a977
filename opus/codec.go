package opus

import "github.com/xiaozhi-hub/hub/voice/driver"

// Codec makes this package's coders for the voice engine (driver.Codec),
// encoding with Settings (the zero Settings: Speech). Its coders are
// reused: their Release keeps them, reset, for the next answer or
// utterance (reuse.go).
type Codec struct{ Settings Settings }

// NewDecoder returns a decoder to rate as a driver.Decoder.
func (Codec) NewDecoder(rate int) (driver.Decoder, error) {
	d, err := takeDecoder(rate)
	if err != nil {
		return nil, err // not a nil *Decoder in a non-nil interface
	}
	return d, nil
}

// NewEncoder returns an encoder with c's Settings as a driver.Encoder.
func (c Codec) NewEncoder(rate, frameMs int) (driver.Encoder, error) {
	s := c.Settings
	if s == (Settings{}) {
		s = Speech
	}
	e, err := s.takeEncoder(rate, frameMs)
	if err != nil {
		return nil, err
	}
	return e, nil
}
