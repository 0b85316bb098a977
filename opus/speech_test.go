package opus

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub/wav"
)

// synthSpeech is a voiced signal shaped like speech at rate: syllables of
// 120–320 ms whose pitch glides (90–260 Hz) under three moving formants,
// a breath of noise (a fricative) before some, and pauses of 60–400 ms
// between them, seconds long. The same seed gives the same signal.
func synthSpeech(rate int, seconds float64, seed uint64) []int16 {
	r := rand.New(rand.NewPCG(seed, 1))
	total := int(seconds * float64(rate))
	var out []int16
	formant := func(f, centre, width float64) float64 { // a resonance's gain at f
		d := (f - centre) / width
		return 1 / (1 + d*d)
	}
	phase := 0.0
	for len(out) < total {
		out = append(out, make([]int16, rate*(60+r.IntN(340))/1000)...) // pause
		if r.IntN(3) == 0 {                                             // fricative
			n := rate * (40 + r.IntN(80)) / 1000
			prev := 0.0
			for i := range n {
				w := r.NormFloat64()
				hp := w - 0.9*prev // tilted towards the highs, as /s/ and /x/
				prev = w
				out = append(out, int16(900*hp*math.Sin(math.Pi*float64(i)/float64(n))))
			}
		}
		n := rate * (120 + r.IntN(200)) / 1000
		f0a, f0b := 90+170*r.Float64(), 90+170*r.Float64()
		f1a, f1b := 300+500*r.Float64(), 300+500*r.Float64()
		f2a, f2b := 900+1500*r.Float64(), 900+1500*r.Float64()
		f3 := 2400 + 600*r.Float64()
		amp := 2500 + 5000*r.Float64()
		for i := range n {
			x := float64(i) / float64(n)
			f0 := f0a + (f0b-f0a)*x
			f1, f2 := f1a+(f1b-f1a)*x, f2a+(f2b-f2a)*x
			phase += 2 * math.Pi * f0 / float64(rate)
			var s float64
			for h := 1; float64(h)*f0 < float64(rate)/2; h++ {
				f := float64(h) * f0
				g := formant(f, f1, 90) + 0.6*formant(f, f2, 120) + 0.3*formant(f, f3, 180)
				s += g / math.Sqrt(float64(h)) * math.Sin(float64(h)*phase)
			}
			env := math.Sin(math.Pi * x) // onset and decay
			out = append(out, int16(max(-32767, min(32767, amp*env*s/3))))
		}
	}
	return out[:total]
}

// espeak is the repository's recorded speech (espeak-ng, "打开客厅的灯",
// server/testdata/speech) resampled linearly to rate, or nil when absent.
func espeak(t testing.TB, rate int) []int16 {
	f, err := os.Open("../server/testdata/speech/open-lamp.wav")
	if err != nil {
		t.Logf("no recorded speech: %v", err)
		return nil
	}
	defer f.Close()
	pcm, from, err := wav.Decode(f, 1<<22)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int16, len(pcm)*rate/from)
	for i := range out {
		pos := float64(i) * float64(from) / float64(rate)
		j := int(pos)
		a, b := float64(pcm[min(j, len(pcm)-1)]), float64(pcm[min(j+1, len(pcm)-1)])
		out[i] = int16(a + (b-a)*(pos-float64(j)))
	}
	return out
}

// roundTrip encodes pcm in frames with s and decodes it back with this
// package's decoder: the decoded signal (delayed by the codec) and the
// packets' mean size in bytes.
func roundTrip(t testing.TB, s Settings, rate, ms int, pcm []int16) ([]int16, float64) {
	enc, err := s.NewEncoder(rate, ms)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := NewDecoder(rate)
	if err != nil {
		t.Fatal(err)
	}
	var out []int16
	bytes, frames := 0, 0
	n := enc.FrameSamples()
	for i := 0; i+n <= len(pcm); i += n {
		pkt, err := enc.Encode(pcm[i : i+n])
		if err != nil {
			t.Fatal(err)
		}
		bytes, frames = bytes+len(pkt), frames+1
		d, err := dec.Decode(pkt)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d...)
	}
	return out, float64(bytes) / float64(frames)
}

// delay is the lag (0 to 20 ms) at which out matches in best.
func delay(in, out []int16, rate int) int {
	best, lag := math.Inf(-1), 0
	for d := 0; d <= rate/50; d++ {
		var c, e float64
		for i := 0; i+d < len(out) && i < len(in); i++ {
			c += float64(in[i]) * float64(out[i+d])
			e += float64(out[i+d]) * float64(out[i+d])
		}
		if e > 0 && c/math.Sqrt(e) > best {
			best, lag = c/math.Sqrt(e), d
		}
	}
	return lag
}

// quality compares the decoded out with the original in, after the
// codec's delay, over 20 ms segments where in is not silent (above -50
// dBFS): the segmental SNR in dB (each segment clamped to −10…35 dB, as
// is usual) and the log-spectral distance in dB (Hann window, bins
// within 20 dB of the segment's loudest, up to 90% of Nyquist).
func quality(in, out []int16, rate int) (segSNR, lsd float64) {
	d := delay(in, out, rate)
	out = out[d:]
	seg := rate / 50
	const fftN = 1024
	var nseg int
	for i := 0; i+seg <= min(len(in), len(out)); i += seg {
		var e, noise float64
		for j := i; j < i+seg; j++ {
			x, y := float64(in[j]), float64(out[j])
			e, noise = e+x*x, noise+(x-y)*(x-y)
		}
		if math.Sqrt(e/float64(seg)) < 32768*math.Pow(10, -50.0/20) {
			continue
		}
		snr := 10 * math.Log10(e/max(noise, 1e-9))
		segSNR += max(-10, min(35, snr))
		a, b := spectrum(in[i:i+seg], fftN), spectrum(out[i:i+seg], fftN)
		top := 0.0
		for _, p := range a {
			top = max(top, p)
		}
		var sum float64
		var bins int
		for k := 1; k < fftN/2*9/10; k++ {
			if a[k] < top/100 {
				continue
			}
			diff := 10*math.Log10(a[k]+1) - 10*math.Log10(b[k]+1)
			sum, bins = sum+diff*diff, bins+1
		}
		lsd += math.Sqrt(sum / float64(max(bins, 1)))
		nseg++
	}
	return segSNR / float64(nseg), lsd / float64(nseg)
}

// spectrum is the power spectrum of a Hann-windowed x, zero-padded to n
// (a power of two).
func spectrum(x []int16, n int) []float64 {
	a := make([]complex128, n)
	for i, v := range x {
		w := 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(len(x)-1))
		a[i] = complex(float64(v)*w, 0)
	}
	for i, j := 1, 0; i < n; i++ { // bit reversal
		bit := n >> 1
		for ; j&bit != 0; bit >>= 1 {
			j ^= bit
		}
		j ^= bit
		if i < j {
			a[i], a[j] = a[j], a[i]
		}
	}
	for size := 2; size <= n; size <<= 1 {
		w := cmplx.Exp(complex(0, -2*math.Pi/float64(size)))
		for start := 0; start < n; start += size {
			wk := complex(1, 0)
			for k := range size / 2 {
				u, v := a[start+k], a[start+k+size/2]*wk
				a[start+k], a[start+k+size/2] = u+v, u-v
				wk *= w
			}
		}
	}
	p := make([]float64, n/2)
	for k := range p {
		p[k] = real(a[k])*real(a[k]) + imag(a[k])*imag(a[k])
	}
	return p
}

// previous is the default before Speech: complexity 5 at 32 kbps, which
// kept the pitch prefilter and measured within 0.5 dB of segmental SNR
// and 0.1 dB of log-spectral distance of complexity 10 at that rate.
var previous = Settings{Complexity: 5, Bitrate: 32000}

// The default encoder settings (Speech) against the ones before them, on
// two synthesised signals and on the recorded espeak sentence at 24 kHz
// in 60 ms frames (the downlink), decoded back by this package: at least
// as good by segmental SNR and by log-spectral distance on each, so that
// the CPU the default saves (BenchmarkEncodeSpeech) is paid in bytes, not
// in what the devices hear. Complexity 10 at 32 kbps is logged beside
// them: go test -v -run SpeechQuality.
func TestSpeechQuality(t *testing.T) {
	const rate = 24000
	signals := map[string][]int16{"synthesised": synthSpeech(rate, 4, 1), "synthesised, another voice": synthSpeech(rate, 4, 7)}
	if pcm := espeak(t, rate); pcm != nil {
		signals["espeak"] = pcm
	}
	for name, pcm := range signals {
		measure := func(s Settings) (snr, lsd float64) {
			out, size := roundTrip(t, s, rate, 60, pcm)
			snr, lsd = quality(pcm, out, rate)
			t.Logf("%s, %s, complexity %d, %d kbps: %.0f bytes per packet, segmental SNR %.1f dB, log-spectral distance %.2f dB",
				name, Implementation, s.Complexity, s.Bitrate/1000, size, snr, lsd)
			return snr, lsd
		}
		measure(Settings{Complexity: 10, Bitrate: 32000})
		prevSNR, prevLSD := measure(previous)
		snr, lsd := measure(Speech)
		if snr < prevSNR || lsd > prevLSD {
			t.Errorf("%s: the default settings %+v sound worse than %+v, the ones before them: %.1f dB SNR / %.2f dB LSD against %.1f / %.2f",
				name, Speech, previous, snr, lsd, prevSNR, prevLSD)
		}
	}
}

func TestSettingsCheck(t *testing.T) {
	for _, s := range []Settings{{Complexity: -1, Bitrate: 32000}, {Complexity: 11, Bitrate: 32000}, {Complexity: 5, Bitrate: 5999}, {Complexity: 5, Bitrate: 600000}} {
		if len(s.Check()) != 1 {
			t.Errorf("%+v passed the check", s)
		}
		if _, err := s.NewEncoder(24000, 60); err == nil {
			t.Errorf("%+v made an encoder", s)
		}
	}
	if errs := Speech.Check(); errs != nil {
		t.Fatal(errs)
	}
}

func threadCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_THREAD, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEncodeSpeech encodes the recorded sentence (24 kHz, 60 ms
// frames, the downlink) with the encoder's automatic 64 kbps at
// complexity 10 (the first settings), complexity 10 at 32 kbps, the
// previous default and Speech; it reports the CPU of the encoding thread per frame (wall
// time is noisy on a shared machine) and the bytes per packet.
func BenchmarkEncodeSpeech(b *testing.B) {
	const rate = 24000
	pcm := espeak(b, rate)
	if pcm == nil {
		pcm = synthSpeech(rate, 4, 1)
	}
	for _, c := range []struct {
		name string
		s    Settings
	}{{"c10-64k", Settings{Complexity: 10, Bitrate: 64000}}, {"c10-32k", Settings{Complexity: 10, Bitrate: 32000}}, {"previous", previous}, {"speech", Speech}} {
		b.Run(c.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			enc, err := c.s.NewEncoder(rate, 60)
			if err != nil {
				b.Fatal(err)
			}
			n := enc.FrameSamples()
			frames := len(pcm) / n
			i, bytes := 0, 0
			start := threadCPU()
			for b.Loop() {
				pkt, err := enc.Encode(pcm[i*n : i*n+n])
				if err != nil {
					b.Fatal(err)
				}
				bytes += len(pkt)
				i = (i + 1) % frames
			}
			b.ReportMetric(float64((threadCPU()-start).Microseconds())/float64(b.N), "cpu-µs/frame")
			b.ReportMetric(float64(bytes)/float64(b.N), "B/packet")
		})
	}
}

// The voice engine's codec encodes with the settings it is given, and
// with Speech when given none: an operator's opus-bitrate reaches the
// device's packets.
func TestCodecSettings(t *testing.T) {
	pcm := synthSpeech(24000, 1, 2)
	size := func(c Codec) int {
		enc, err := c.NewEncoder(24000, 60)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for i := 0; i+1440 <= len(pcm); i += 1440 {
			pkt, err := enc.Encode(pcm[i : i+1440])
			if err != nil {
				t.Fatal(err)
			}
			n += len(pkt)
		}
		return n
	}
	def, speech, high := size(Codec{}), size(Codec{Settings: Speech}), size(Codec{Settings: Settings{Complexity: Speech.Complexity, Bitrate: 2 * Speech.Bitrate}})
	if def != speech || high < def*3/2 {
		t.Fatalf("bytes for a second of speech: zero settings %d, Speech %d, twice its bitrate %d", def, speech, high)
	}
	if _, err := (Codec{Settings: Settings{Complexity: 11, Bitrate: 32000}}).NewEncoder(24000, 60); err == nil {
		t.Fatal("complexity 11 made an encoder")
	}
}
