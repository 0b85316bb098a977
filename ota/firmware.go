package ota

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xiaozhi-hub/hub"
)

// version is a firmware version: numeric segments separated by dots, as
// the firmware compares them (std::stoi per segment; "v2.4.2" would throw).
type version struct {
	text string
	nums []int
}

// parseVersion accepts only what every firmware can compare: 1 to 8
// segments of 1 to 9 digits.
func parseVersion(s string) (version, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 8 {
		return version{}, false
	}
	v := version{text: s, nums: make([]int, len(parts))}
	for i, p := range parts {
		if len(p) == 0 || len(p) > 9 || strings.Trim(p, "0123456789") != "" {
			return version{}, false
		}
		v.nums[i], _ = strconv.Atoi(p)
	}
	return v, true
}

// parseRunning reads the version a device reports like std::stoi does:
// the leading digits of each segment ("2.4.2-6-g4814" is 2.4.2). A segment
// without leading digits makes the version unusable.
func parseRunning(s string) ([]int, bool) {
	if s == "" {
		return nil, false
	}
	var nums []int
	for _, p := range strings.Split(s, ".") {
		n := 0
		for n < len(p) && n < 9 && p[n] >= '0' && p[n] <= '9' {
			n++
		}
		if n == 0 {
			return nil, false
		}
		v, _ := strconv.Atoi(p[:n])
		nums = append(nums, v)
	}
	return nums, true
}

// compareVersions is the firmware's comparison: the first differing segment
// decides; on a tie the longer version is newer.
func compareVersions(a, b []int) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] - b[i]
		}
	}
	return len(a) - len(b)
}

// validBoard keeps board names safe as one path element (BOARD_NAME is
// [a-z0-9.-]+ on the firmware).
func validBoard(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] == '.' || s[0] == '-' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// firmwareDir is a directory of images laid out as <board>/<version>.bin.
// A board's listing is read again when its directory changes.
type firmwareDir struct {
	root string
	log  *slog.Logger

	mu     sync.Mutex
	boards map[string]boardImages
}

type boardImages struct {
	mod    time.Time
	images []image // oldest first
}

type image struct {
	version version
	path    string
}

func openFirmwareDir(root string, log *slog.Logger) (*firmwareDir, error) {
	info, err := os.Stat(root)
	if err != nil || !info.IsDir() {
		return nil, fmt.Errorf("firmware-dir: %s is not a directory", root)
	}
	f := &firmwareDir{root: root, log: log, boards: map[string]boardImages{}}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("firmware-dir: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() && validBoard(e.Name()) {
			imgs := f.images(e.Name())
			if len(imgs) > 0 {
				log.Info("firmware available", "board", e.Name(), "newest", imgs[len(imgs)-1].version.text, "images", len(imgs))
			}
		}
	}
	return f, nil
}

// images returns the board's valid images, reading the directory again if
// it changed. Files named with a version that is not numeric are refused
// and logged: the firmware would crash parsing them.
func (f *firmwareDir) images(board string) []image {
	if !validBoard(board) {
		return nil
	}
	dir := filepath.Join(f.root, board)
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if b, ok := f.boards[board]; ok && b.mod.Equal(info.ModTime()) {
		return b.images
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.log.Warn("cannot read firmware directory", "dir", dir, "err", err)
		return nil
	}
	var imgs []image
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".bin")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		v, ok := parseVersion(name)
		if !ok {
			f.log.Warn("firmware image refused: its version must be numbers separated by dots, such as 2.4.2 (the device cannot compare others)",
				"board", board, "file", e.Name())
			continue
		}
		imgs = append(imgs, image{version: v, path: filepath.Join(dir, e.Name())})
	}
	slices.SortStableFunc(imgs, func(a, b image) int { return compareVersions(a.version.nums, b.version.nums) })
	f.boards[board] = boardImages{mod: info.ModTime(), images: imgs}
	return imgs
}

func (f *firmwareDir) newest(board string) (image, bool) {
	imgs := f.images(board)
	if len(imgs) == 0 {
		return image{}, false
	}
	return imgs[len(imgs)-1], true
}

// serveFirmware sends an image with Content-Length (the firmware aborts on
// chunked bodies) and supports Range requests.
func (s *Service) serveFirmware(w http.ResponseWriter, r *http.Request) {
	board, file := r.PathValue("board"), r.PathValue("file")
	name, ok := strings.CutSuffix(file, ".bin")
	var img *image
	if ok && s.fw != nil {
		for _, i := range s.fw.images(board) {
			if i.version.text == name {
				img = &i
			}
		}
	}
	if img == nil {
		s.refuse(w, r, hub.Errorf(hub.ENOTFOUND, "no firmware image %s for board %q", file, board))
		return
	}
	fh, err := os.Open(img.path)
	if err != nil {
		s.refuse(w, r, hub.Errorf(hub.ENOTFOUND, "firmware image %s for board %q is gone", file, board))
		return
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	s.log.Info("firmware download", "board", board, "version", name, "bytes", info.Size(), "remote", r.RemoteAddr)
	http.ServeContent(w, r, file, info.ModTime(), fh)
}
